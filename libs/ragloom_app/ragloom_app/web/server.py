"""Run the web app with uvicorn in a thread: :class:`WebServer` (start, url, close)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

__all__ = ["WebServer"]

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT = 60.0
"""Seconds to wait for the server to listen (gradio's startup runs in its lifespan)."""
SHUTDOWN_GRACE = 3.0
"""Seconds open requests (a browser's event streams) get to finish when stopping."""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the server as Ctrl-C does


class WebServer:
    """uvicorn serving ``asgi_app`` on ``host:port`` in a daemon thread.

    ``on_close`` runs first when stopping (gradio's queue and event streams end there,
    so uvicorn does not wait on them).
    """

    def __init__(
        self,
        asgi_app: ASGIApp,
        host: str,
        port: int,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self._on_close = on_close
        config = uvicorn.Config(
            asgi_app,
            host=host.strip("[]"),
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE),
            # The app's own guards read the client's Host; no proxy headers are trusted.
            proxy_headers=False,
            # httptools refuses a request with both Content-Length and chunked encoding
            # (h11 reads it as chunked), so the declared size the upload checks read is
            # the size that arrives.
            http="httptools",
            server_header=False,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def listening(self) -> bool:
        """Whether the server accepts connections now."""
        return bool(self._server.started) and self._thread is not None and self._thread.is_alive()

    def start(self) -> WebServer:
        """Start listening; returns once the server accepts connections.

        Raises :class:`OSError` if it cannot (the port is taken, the address is not this
        machine's): uvicorn has logged why.
        """
        self._thread = threading.Thread(target=self._run, name="ragloom-web", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive():
                raise OSError(f"the web UI could not listen on {self.host}:{self.port}")
            if time.monotonic() > deadline:
                self.close()
                raise OSError(f"the web UI did not start within {STARTUP_TIMEOUT:.0f} s")
            time.sleep(0.01)
        return self

    def _run(self) -> None:
        try:
            self._server.run()
        except SystemExit:  # uvicorn's way to fail at startup, after logging why
            logger.debug("the web server stopped at startup")

    def wait(self) -> None:
        """Block until the server stops; Ctrl-C or SIGTERM stops it (gracefully)."""
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(timeout=0.5)
        except KeyboardInterrupt:
            logger.info("stopping the web UI")
        finally:
            self.close()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def close(self) -> None:
        """Stop serving and wait for the server thread (idempotent)."""
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=SHUTDOWN_GRACE + 5)
