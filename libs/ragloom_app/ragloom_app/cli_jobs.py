"""``ragloom jobs ...`` (follow and cancel indexing jobs) and ``ragloom worker`` (run them).

The command line is the machine's operator: it sees every user's jobs. ``ragloom worker``
runs the jobs of ``JOB_QUEUE = "procrastinate"`` (docs/deploy.md, "Indexing jobs"); start
as many as the machines have cores to spare, each with the app's settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from typing import Any

import click

__all__ = ["jobs", "worker"]

logger = logging.getLogger(__name__)


def _run(handler: Any, **options: Any) -> int:
    from ragloom_app.cli import _run as run_on_app

    return run_on_app(handler, **options)


def _say(text: str) -> None:
    from ragloom_app.cli_handlers import _say as say

    say(text)


def _as_dict(app: Any, job: Any, *, with_outcomes: bool = True) -> dict[str, Any]:
    from ragloom_app.api.job_routes import job_out

    return job_out(app, job, with_outcomes=with_outcomes).model_dump(mode="json")


def _line(job: dict[str, Any]) -> str:
    done = f"{job['files_done']}/{len(job['files'])} files"
    where = f" on {job['current']}" if job["current"] else ""
    return (
        f"{job['id']}  {job['status']:<9}  {round(100 * job['fraction']):>3}%  {done}{where}"
        f"  index={job['index']!r} owner={job.get('owner', '')}"
    )


@click.group(help="follow and cancel indexing jobs")
def jobs() -> None:
    """``ragloom jobs ...``."""


@jobs.command(name="list", help="every user's jobs, newest first")
@click.option("--active", is_flag=True, help="only queued and running jobs")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print one JSON array")
def jobs_list(active: bool, limit: int, as_json: bool) -> int:
    return _run(_cmd_list, active=active, limit=limit, json=as_json)


def _cmd_list(app: Any, args: argparse.Namespace) -> int:
    # As the API's list: the outcomes (up to MAX_JOB_OUTCOMES a job) are `jobs show`'s.
    found = app.jobs.jobs(None, active_only=args.active, limit=args.limit, with_outcomes=False)
    shown = [{**_as_dict(app, job, with_outcomes=False), "owner": job.owner} for job in found]
    if args.json:
        print(json.dumps(shown, indent=2))
    elif not shown:
        _say("no jobs")
    for job in [] if args.json else shown:
        _say(_line(job))
    return 0


@jobs.command(name="show", help="one job and each file's outcome")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def jobs_show(job_id: str, as_json: bool) -> int:
    return _run(_cmd_show, job_id=job_id, json=as_json)


def _cmd_show(app: Any, args: argparse.Namespace) -> int:
    job = app.jobs.get(args.job_id, "", is_admin=True)  # UnknownJobError: told, status 2
    shown = {**_as_dict(app, job), "owner": job.owner}
    if args.json:
        print(json.dumps(shown, indent=2))
        return 0
    _say(_line(shown))
    if shown["ahead"] is not None:  # queued: how many run before it (users take turns)
        _say(f"  waiting its turn: {shown['ahead']} job{'' if shown['ahead'] == 1 else 's'} ahead")
    if shown["error"]:
        _say(f"  {shown['error']}")
    for outcome in shown["outcomes"]:
        reason = f": {outcome['reason']}" if outcome["reason"] else ""
        _say(f"  {outcome['status']:<9} {outcome['file']}{reason}")
    if shown["outcomes_not_listed"]:
        _say(f"  … and {shown['outcomes_not_listed']:,} more files done, not listed")
    return 0


@jobs.command(name="cancel", help="cancel a job (a running one after its current file)")
@click.argument("job_id")
def jobs_cancel(job_id: str) -> int:
    return _run(_cmd_cancel, job_id=job_id)


def _cmd_cancel(app: Any, args: argparse.Namespace) -> int:
    job = app.jobs.cancel(args.job_id, "", is_admin=True)  # UnknownJobError: told, status 2
    if job.status.value == "cancelled":
        _say(f"{job.id}: cancelled")
    elif job.finished:
        _say(f"{job.id}: already {job.status.value}")
    else:
        _say(f"{job.id}: stops after the file it is indexing")
    return 0


@click.command(help="run indexing jobs from the queue (JOB_QUEUE = 'procrastinate')")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="jobs run at once (threads of this process)",
)
def worker(concurrency: int) -> int:
    return _run(_cmd_worker, concurrency=concurrency)


def _cmd_worker(app: Any, args: argparse.Namespace) -> int:
    from ragloom.chunking import warm_readers_sandbox
    from ragloom_app.jobs.queues import (
        JobSweeper,
        ProcrastinateJobQueue,
        conninfo,
        procrastinate_app,
    )
    from ragloom_app.jobs.store import JobStore
    from ragloom_app.jobs.worker import run_worker, worker_options
    from ragloom_app.settings import SettingsError

    if app.settings.job_queue != "procrastinate":
        raise SettingsError(
            "JOB_QUEUE: `ragloom worker` runs the jobs of the 'procrastinate' queue; with "
            f"{app.settings.job_queue!r} the app runs its jobs itself"
        )
    # Refused in words before the models warm up: conninfo takes PostgreSQL alone (on
    # SQLite the queue's first statement failed with a traceback).
    conninfo(app.settings.database)
    # The embedding model and the readers sandbox are started before the first job, not
    # by it (about a second each); then what a stopped worker left half done (its files,
    # its jobs) is taken up first. A sandbox that cannot start is logged: the files then
    # fail with the reason.
    app.embeddings().embed_documents(["warm up"])
    warm_readers_sandbox()
    app.recover_indices()
    stopping = threading.Event()  # set at Ctrl-C or SIGTERM: see run_worker
    queue_app = procrastinate_app(app, stopping)
    stall = float(app.settings.job_stall_seconds)
    # The sweeper submits from its own thread, through a pool of its own (as an app process
    # does): the worker's pool belongs to the worker's event loop, and is closed while the
    # worker starts again.
    submitter = ProcrastinateJobQueue(app)
    sweeper = JobSweeper(
        JobStore(app.engine),
        stall,
        submitter.submit,
        also=submitter.refresh_turns,  # a user's cancel moves their next jobs up too
        unheld=submitter.unheld,
        data_dir=app.settings.data_dir,
    )
    try:
        sweeper.start(at_once=True)  # in its thread: a failed turn must not end the worker
        _say(f"ragloom worker: running indexing jobs, {args.concurrency} at a time (Ctrl-C stops)")
        # Ctrl-C or SIGTERM: no new job is taken, and the jobs running finish first. A
        # worker killed outright loses its jobs to the others after JOB_STALL_SECONDS (the
        # sweepers); one that stopped because the database went away starts again.
        run_worker(queue_app, stopping, **worker_options(args.concurrency, stall))
    finally:
        sweeper.stop()
        submitter.close()
    return 0
