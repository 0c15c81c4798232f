"""The web app: a FastAPI app with the guards in front and the gradio UI mounted at ``/``.

Owning the ASGI app (rather than ``demo.launch()``) is what lets the guards see every
request before gradio does. Outermost first: :class:`~.headers.SecurityHeaders` (so
refusals carry the headers too), :class:`~.hosts.HostGuard`,
:class:`~.requests.RequestGuard`, with login :class:`~.login.LoginRedirect` and
:class:`~.gradio_sessions.SessionBinding`, then gradio.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import APIRouter, FastAPI
from starlette.middleware import Middleware
from starlette.routing import Mount

from ragloom_app.settings import AppSettings
from ragloom_app.web.gradio_sessions import SessionBinding, waiting_events
from ragloom_app.web.headers import SecurityHeaders
from ragloom_app.web.hosts import HostGuard
from ragloom_app.web.login import LoginRedirect, UserLookup
from ragloom_app.web.requests import RequestGuard

__all__ = ["WebApp", "build_web_app"]

logger = logging.getLogger(__name__)


@dataclass
class WebApp:
    """The ASGI app to serve, and the gradio app mounted in it."""

    asgi: FastAPI
    demo: gr.Blocks
    gradio_app: Any

    def stop(self) -> None:
        """End gradio's queue and its open event streams (before the server stops)."""
        self.demo.close(verbose=False)
        self.gradio_app.stop_event.set()


def build_web_app(
    demo: gr.Blocks,
    settings: AppSettings,
    *,
    host: str,
    port: int,
    styling: Mapping[str, Any],
    routers: Sequence[APIRouter] = (),
    user_id: UserLookup | None = None,
) -> WebApp:
    """Mount ``demo`` (queued, not launched) behind the guards, with the limits of ``settings``.

    ``styling`` holds the ``theme`` and ``css`` of the page. ``routers`` (the HTTP API)
    are served before the UI, behind the same guards, their OpenAPI document at
    ``/openapi.json``. ``user_id`` names the user of each UI request, ``None`` for one
    that must log in first (:func:`~ragloom_app.web.login.ui_user_id`): gradio refuses
    those, and a page load goes to ``/login``.
    """
    import ragloom_app
    from ragloom_app.api.errors import install_error_handlers

    asgi = FastAPI(
        title="Ragloom",
        version=ragloom_app.__version__,
        summary="Chat with your documents; reasoning modes are plugins.",
        # FastAPI's own docs pages load their scripts from a CDN: none of them.
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if routers else None,
        middleware=[
            # The UI's page, and the API's docs when there is an API: their inline
            # scripts are allowed by hash.
            Middleware(SecurityHeaders, page_paths=("/", "/docs") if routers else ("/",)),
            Middleware(
                HostGuard,
                allowed_hosts=[host, *settings.allowed_hosts],
                allowed_origins=settings.allowed_hosts,
            ),
            Middleware(
                RequestGuard,
                max_request_bytes=settings.max_request_bytes,
                max_upload_request_bytes=settings.max_upload_request_bytes,
                upload_dir=Path(gr.utils.get_upload_folder()),
                min_free_disk_bytes=settings.min_free_disk_bytes,
            ),
            *(
                [
                    Middleware(LoginRedirect, user_id=user_id),
                    Middleware(
                        SessionBinding,
                        user_id=user_id,
                        waiting=partial(waiting_events, demo),
                        max_waiting_per_user=settings.queue_max_per_user,
                    ),
                ]
                if user_id is not None
                else []
            ),
        ],
    )
    if routers:
        install_error_handlers(asgi)
    for router in routers:
        asgi.include_router(router)  # before the UI's mount at /, which takes every path
    gr.mount_gradio_app(
        asgi,
        demo,
        path="/",
        server_name=host,
        server_port=port,
        # The same limit as the index's: a larger file is refused while it streams in.
        max_file_size=settings.max_file_bytes,
        # Runs would be kept in the browser (and offered for upload to a hub): not for
        # private documents. No "Built with Gradio" link either.
        run_history=False,
        footer_links=["api", "settings"],
        # Only errors raised as gr.Error (worded, with a log reference) reach the browser;
        # anything else escaping a handler shows as "Error", its text stays in the log.
        show_error=False,
        ssr_mode=False,
        mcp_server=False,
        pwa=False,
        enable_monitoring=False,
        auth_dependency=user_id,
        **styling,
    )
    # launch() sets this; mounting does not. Until it is set gradio skips its check that
    # an event's input files were uploaded (processing_utils._check_allowed), and would
    # copy any file of this machine named in a request into its cache.
    demo.has_launched = True
    gradio_app = next(
        route.app for route in asgi.routes if isinstance(route, Mount) and route.path == ""
    )
    return WebApp(asgi=asgi, demo=demo, gradio_app=gradio_app)
