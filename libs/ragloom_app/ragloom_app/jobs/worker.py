"""The loop of ``ragloom worker``: procrastinate's worker, started again when it ended
because PostgreSQL (the app database and the queue's broker) went away.

procrastinate's worker stops when it cannot reach its database: fetching the next job,
beating its heart or listening for new jobs waits for a connection from its pool for at
most :data:`~ragloom_app.jobs.queues.BROKER_WAIT_SECONDS`, and then the worker ends (its
own docs leave restarting it to a supervisor). An outage longer than that used to end
``ragloom worker`` for good, and the jobs queued meanwhile waited for an operator
(docs/reliability.md). This loop is that supervisor: the worker is started again,
:data:`RESTART_PAUSE_SECONDS` later, until the process is asked to stop (Ctrl-C or
SIGTERM). A job a stopped worker was running finishes first, as on Ctrl-C; one it could
not finish is taken back by the sweepers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from typing import TYPE_CHECKING, Any

from ragloom.postgres_outage import outage_words

if TYPE_CHECKING:
    import procrastinate

__all__ = ["RESTART_PAUSE_SECONDS", "run_worker", "worker_options"]

logger = logging.getLogger(__name__)

RESTART_PAUSE_SECONDS = 2.0
"""The pause before a worker that stopped on its own is started again."""


def worker_options(concurrency: int, stall_seconds: float) -> dict[str, Any]:
    """The options ``ragloom worker`` runs procrastinate's worker with: the indexing
    queue, ``concurrency`` jobs at once, its heartbeat and stall time from
    ``JOB_STALL_SECONDS``. A task that succeeded is deleted as it ends: procrastinate
    keeps every task (and its events) by default, and its tables grew by two rows and
    more per upload, for ever. The job's own row (``indexing_jobs``) says what became of
    it; failed and aborted tasks stay, for an operator to look at (docs/deploy.md)."""
    from ragloom_app.jobs.queues import QUEUE_NAME

    return {
        "queues": [QUEUE_NAME],
        "concurrency": concurrency,
        "update_heartbeat_interval": max(stall_seconds / 4, 0.5),
        "stalled_worker_timeout": stall_seconds,
        "delete_jobs": "successful",
    }


def run_worker(
    queue_app: procrastinate.App, stopping: threading.Event | None = None, **options: Any
) -> None:
    """Run procrastinate's worker with ``options`` (``App.run_worker_async``'s) until this
    process is asked to stop, starting it again each time it stops on its own or because
    the database went away. Any other error ends the loop, raised. ``stopping`` (the job
    runner's) is set at the first Ctrl-C or SIGTERM, so that a job waiting for the
    database to come back gives up rather than hold the stop for minutes."""
    asyncio.run(_supervise(queue_app, options, stopping or threading.Event()))


async def _supervise(
    queue_app: procrastinate.App, options: dict[str, Any], runner_stopping: threading.Event
) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    numbers = (signal.SIGINT, signal.SIGTERM)

    def asked_to_stop() -> None:
        # A second Ctrl-C or SIGTERM ends the process at once, without waiting for the
        # jobs under way: the handlers go back to Python's own.
        for number in numbers:
            loop.remove_signal_handler(number)
        runner_stopping.set()
        stopping.set()

    for number in numbers:
        loop.add_signal_handler(number, asked_to_stop)
    while True:
        why = await _run_once(queue_app, options, stopping)
        if stopping.is_set():
            return
        logger.warning(
            "the worker stopped (%s); it starts again in %.0f s", why, RESTART_PAUSE_SECONDS
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), RESTART_PAUSE_SECONDS)
        if stopping.is_set():
            return


async def _run_once(
    queue_app: procrastinate.App, options: dict[str, Any], stopping: asyncio.Event
) -> str:
    """Run the worker until it stops or ``stopping`` is set; why it stopped, in words."""

    async def open_and_run() -> None:
        await queue_app.open_async()  # waits for the database too, so it is stoppable
        await queue_app.run_worker_async(install_signal_handlers=False, **options)

    try:
        work = asyncio.create_task(open_and_run())
        asked = asyncio.create_task(stopping.wait())
        await asyncio.wait({work, asked}, return_when=asyncio.FIRST_COMPLETED)
        asked.cancel()
        if not work.done():
            # procrastinate's graceful stop: no new job is taken, the running ones finish.
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            return "asked to stop"
        work.result()  # its error, if it ended with one
        return "one of its tasks failed; the log above says which"
    except Exception as exc:
        if outage_words(exc) is None:
            raise
        logger.debug("the worker's database could not be reached", exc_info=True)
        return "its database could not be reached"
    finally:
        await queue_app.close_async()
