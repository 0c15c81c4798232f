"""Start the web UI: ``serve(app)`` (what ``ragloom serve`` and ``python app.py`` run).

The page is up at once; loading the models and indexing the first-run documents happen
in a background thread, so the first visitor never waits on them to see the page (a
question asked meanwhile waits for the model in its own worker thread, not the UI's).
Files a stopped process left unfinished are recovered in another background thread, and
only once the server listens (:func:`recover_in_background`).
Gradio is imported only here, after the telemetry switches are set: it reads them at
import time.

The UI is mounted in Ragloom's own ASGI app (:mod:`ragloom_app.web`), which checks every
request before gradio sees it: on loopback without login (unless ``REQUIRE_LOGIN``), on
any other address with it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.privacy import switch_off_telemetry
from ragloom_app.web.hosts import check_serving_host, is_loopback
from ragloom_app.web.server import WebServer

if TYPE_CHECKING:
    import gradio as gr

    from ragloom_app.app import BaseApp

__all__ = [
    "LISTEN_WAIT_SECONDS",
    "UPLOAD_CACHE",
    "QueueSwitch",
    "RunningUI",
    "prepare_in_background",
    "recover_in_background",
    "serve",
]

logger = logging.getLogger(__name__)

#: How long the recovery waits for the server to listen before it gives up (the launch
#: failed, e.g. the port was taken); `ragloom index check --repair` recovers then.
LISTEN_WAIT_SECONDS = 300.0

UPLOAD_CACHE = "uploads"
"""The folder of the data folder where gradio keeps uploads until they are indexed."""


class QueueSwitch:
    """The app's job queue as a server runs it: started once the server's recovery is
    done, stopped with the server. A start that comes after the stop does nothing: the
    queue it started would keep its threads running with nobody left to stop them."""

    def __init__(self, app: BaseApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        """Start the queue (resuming the jobs left queued), unless stopped already."""
        with self._lock:
            if not self._stopped:
                self.app.jobs.start()

    def stop(self) -> None:
        """Stop the queue's threads for good; the jobs it holds stay queued."""
        with self._lock:
            self._stopped = True
            if self.app.started:
                self.app.jobs.close()


@dataclass
class RunningUI:
    """A UI being served: its address, the gradio Blocks, and ``close()`` to stop it."""

    url: str
    demo: gr.Blocks
    server: WebServer
    app: BaseApp | None = None
    queue: QueueSwitch | None = None

    def close(self) -> None:
        """Stop serving (and the app's job queue: the jobs it holds stay queued)."""
        self.server.close()
        if self.queue is not None:
            self.queue.stop()


QUEUE_IDLE_POLL_SECONDS = 0.05
"""How often gradio's queue looks for a new event while it has none (gradio: 1 ms)."""
QUEUE_PROGRESS_POLL_SECONDS = 0.1
"""How often it looks for progress to send (gradio: 10 ms); 10 updates a second."""


def _poll_queue_calmly(demo: gr.Blocks) -> None:
    """Make gradio's queue poll at :data:`QUEUE_IDLE_POLL_SECONDS`, not every millisecond.

    Gradio's queue loops on ``asyncio.sleep`` (1 ms when free, off Windows): an idle
    server then spends some 8 % of a core waking up (measured on 2 cores), in the event
    loop every request of the API also runs on. Gradio has no setting for it; its own
    Windows values are used here. A new UI event waits at most 50 ms more to start.
    """
    queue: Any = getattr(demo, "_queue", None)
    if not hasattr(queue, "sleep_when_free"):
        logger.warning("UI: gradio's queue has changed; its idle polling is left as it is")
        return
    queue.sleep_when_free = QUEUE_IDLE_POLL_SECONDS
    queue.progress_update_sleep_when_free = QUEUE_PROGRESS_POLL_SECONDS


def _prepare(app: BaseApp, first_run_docs: bool, warm_up: bool) -> None:
    """Load the models, then index the first-run documents; log, never raise."""
    if warm_up:
        try:
            # The LLM first: it is what the first question waits for, and it loads in
            # seconds, while the first-run indexing can take minutes.
            app.llm().warm_up()
            logger.info("UI: the LLM %r is ready", app.llm().name)
        except Exception:
            # The chat reports the same error to the user when a question is asked.
            logger.exception("UI: loading the LLM failed")
        try:
            # Every question embeds its query and every upload its chunks: load it now too.
            app.embeddings().embed_query("warm up")
            logger.info("UI: the embedding model is ready")
        except Exception:
            logger.exception("UI: loading the embedding model failed")
        try:
            app.focus_embeddings().embed_query("warm up")  # the same model, unless set apart
        except Exception:
            logger.exception("UI: loading the sentence focus's model (FOCUS_EMBEDDING) failed")
        _start_sandboxes(app)
    if not first_run_docs:
        return
    try:
        for event in app.seed_first_run():
            if isinstance(event, IndexingProgress):
                logger.debug(
                    "first run: %3.0f%% %s: %s", 100 * event.fraction, event.name, event.message
                )
            elif isinstance(event, FileOutcome):
                if event.status == "failed":
                    logger.warning("first run: %s failed: %s", event.name, event.reason)
                else:
                    logger.info(
                        "first run: %s %s (%d chunks)", event.name, event.status, event.chunks
                    )
    except Exception:
        logger.exception("first run: indexing the bundled documents failed")


def _start_sandboxes(app: BaseApp) -> None:
    """Start the worker processes files are read in and tools run in (about a second).

    Neither raises: a sandbox that cannot start is logged, and the file or tool call that
    needs it fails with the reason instead.
    """
    from ragloom.agents.tools import warm_tools_sandbox
    from ragloom.chunking import warm_readers_sandbox

    if warm_readers_sandbox():
        logger.info("UI: the readers sandbox is ready")
    warm_tools_sandbox(app.tools_by_name().values())


def prepare_in_background(
    app: BaseApp, *, first_run_docs: bool = True, warm_up: bool = True
) -> threading.Thread:
    """Start the model loading and first-run indexing thread; returns it (a daemon)."""
    thread = threading.Thread(
        target=_prepare, args=(app, first_run_docs, warm_up), name="ragloom-prepare", daemon=True
    )
    thread.start()
    return thread


def _recover_when_listening(
    app: BaseApp, listening: Callable[[], bool], wait: float, queue: QueueSwitch
) -> None:
    deadline = time.monotonic() + wait
    while not listening():
        if time.monotonic() > deadline:
            logger.warning(
                "UI: the server did not listen within %g s; interrupted files were not "
                "recovered (run `ragloom index check --repair`)",
                wait,
            )
            return
        time.sleep(0.05)
    logger.info("UI: recovering files that a stopped process left unfinished")
    try:
        outcomes = app.recover_indices()
    except Exception:
        logger.exception("UI: recovering interrupted files failed")
        return
    if outcomes:
        logger.info("UI: recovery finished: %d files", len(outcomes))
    # Then the jobs left queued or running by a stopped process (after the files, so the
    # two never take up the same file at once).
    try:
        queue.start()
    except Exception:
        logger.exception("UI: starting the indexing job queue failed")


def recover_in_background(
    app: BaseApp,
    listening: Callable[[], bool],
    *,
    wait: float = LISTEN_WAIT_SECONDS,
    queue: QueueSwitch | None = None,
) -> threading.Thread:
    """Start a daemon thread that recovers interrupted files once ``listening()`` is true,
    then starts the job queue (through ``queue``, the server's, if given).

    After the server listens, never before: a file that kills the process again then
    takes it down once more at most (it is failed after that, see
    ``index.file.recovery``), and never keeps the UI from starting. Returns the thread.
    """
    thread = threading.Thread(
        target=_recover_when_listening,
        args=(app, listening, wait, queue or QueueSwitch(app)),
        name="ragloom-recovery",
        daemon=True,
    )
    thread.start()
    return thread


def serve(
    app: BaseApp,
    host: str = "127.0.0.1",
    port: int = 7860,
    first_run_docs: bool = True,
    block: bool = True,
    *,
    warm_up: bool = True,
    on_listening: Callable[[str], None] | None = None,
) -> RunningUI:
    """Build the UI for ``app`` and serve it on ``host:port``.

    On a loopback address (or ``localhost``) the UI is the local user's unless
    ``REQUIRE_LOGIN`` is on; on any other address login is turned on. Login needs an
    enabled account (:class:`UnsafeHostError` otherwise, saying what to do). With
    ``block=False`` it
    returns as soon as the server listens (call ``close()`` on the result to stop it);
    otherwise it returns when the server stops (Ctrl-C). ``warm_up`` loads the LLM and the
    embedding model in the background right away, not at the first use. ``on_listening``
    is called with the URL once the server listens.

    Gradio's upload folder is a process-wide setting (``GRADIO_TEMP_DIR``, here the data
    folder's ``uploads``): serve one UI per process at a time, or the older one's uploads
    are refused as not uploaded.
    """
    switch_off_telemetry()
    app.start()
    settings = app.settings
    if not is_loopback(host) and not settings.require_login:
        logger.info("UI: serving on %s, so login is required", host)
        settings.require_login = True
    check_serving_host(
        host, login_required=settings.require_login, accounts=app.accounts.enabled_count()
    )
    if host.strip("[]") in ("0.0.0.0", "::") and not settings.allowed_hosts:
        logger.warning(
            "UI: serving on every address of this machine, but ALLOWED_HOSTS is empty: "
            "requests are answered only when their Host is %s or a loopback name; list the "
            "names people open Ragloom by in ALLOWED_HOSTS",
            host,
        )
    # Gradio's uploads wait in the data folder (owner-only), not in a shared /tmp/gradio
    # that another user of the machine could have created and could read or swap files in.
    os.environ["GRADIO_TEMP_DIR"] = str((settings.data_dir / UPLOAD_CACHE).resolve())
    from ragloom_app.api import api_routers
    from ragloom_app.pages.chat import ChatPage
    from ragloom_app.ui.layout import build_ui, launch_styling
    from ragloom_app.web.asgi import build_web_app
    from ragloom_app.web.login import login_router, ui_user_id

    if first_run_docs or warm_up:
        prepare_in_background(app, first_run_docs=first_run_docs, warm_up=warm_up)
    demo = build_ui(app)
    # api_open=False: gradio's run/ and api/ routes would call an event's function
    # outside the queue, past its bounds (QUEUE_MAX_SIZE, QUEUE_MAX_PER_USER, the answer's
    # concurrency); clients go through the queue (gradio_client does).
    demo.queue(default_concurrency_limit=1, max_size=settings.queue_max_size, api_open=False)
    _poll_queue_calmly(demo)
    web = build_web_app(
        demo,
        settings,
        host=host,
        port=port,
        styling=launch_styling(),
        routers=[login_router(app), *api_routers(ChatPage(app))],
        user_id=ui_user_id(app),
    )
    server = WebServer(web.asgi, host, port, on_close=web.stop)
    # Recovery waits for the server to listen: an interrupted file that kills the process
    # again must find the UI up, not keep it from ever starting.
    queue = QueueSwitch(app)
    recover_in_background(app, lambda: server.listening, queue=queue)
    server.start()
    running = RunningUI(url=server.url, demo=demo, server=server, app=app, queue=queue)
    logger.info("Ragloom UI at %s", running.url)
    if on_listening is not None:
        on_listening(running.url)
    if block:
        try:
            server.wait()
        finally:
            # The job queue too: a running job is handed back to the queue uncounted
            # (a stop on purpose is no dead worker), not left for the next start to count.
            running.close()
    return running
