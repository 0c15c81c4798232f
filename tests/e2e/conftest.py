"""Fixtures of the end-to-end tests: Playwright on Debian's chromium, and a live UI.

Playwright drives the system chromium (``/usr/bin/chromium``, see ``scripts/ensure-chromium``);
``playwright install`` would download a browser of its own, which cannot work offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers.ports import free_port
from tests.helpers.stores import STORE_KINDS, stores_for

if TYPE_CHECKING:
    import gradio as gr

    from ragloom_app.app import BaseApp

CHROMIUM = Path("/usr/bin/chromium")
NO_CHROMIUM = f"{CHROMIUM} is missing: install Debian's chromium (scripts/ensure-chromium)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests, with the reason, on a machine without chromium."""
    if CHROMIUM.exists():
        return
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.skip(reason=NO_CHROMIUM))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at the system chromium."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        # No sandbox: the tests run as root in a container. The rest keeps chromium from
        # reaching out to Google's services on its own.
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@dataclass
class LiveUI:
    """A running Ragloom UI: its URL, the app behind it and the gradio Blocks."""

    url: str
    app: BaseApp
    demo: gr.Blocks


@contextmanager
def scripted_ui(
    folder: Path,
    documents: Mapping[str, str],
    prepare: Callable[[BaseApp], object] | None = None,
) -> Iterator[LiveUI]:
    """The UI served in-process over a scripted LLM (``ReplayLLM``, its replies set by the
    test) and hashed embeddings, with ``documents`` (file name to text) indexed;
    ``prepare`` is called with the app before the UI is built (to register a mode)."""
    from ragloom_app.ui.server import serve
    from tests.helpers.scripted_app import scripted_app

    app = scripted_app(folder, {"scripted": {"class": "ragloom_app.testing.ReplayLLM"}}, documents)
    if prepare is not None:
        prepare(app)
    running = serve(app, port=free_port(), first_run_docs=False, block=False, warm_up=False)
    try:
        yield LiveUI(url=running.url, app=app, demo=running.demo)
    finally:
        running.close()


@pytest.fixture(scope="module", params=STORE_KINDS)
def live_ui(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[LiveUI]:
    """The UI served in-process on a free loopback port, over a fresh data folder: on the
    embedded stores, then on the servers (PostgreSQL and ``chroma run``).

    The default settings (no ``flowsettings.py``): one empty "My files" index, the FullQA
    mode, the bundled local LLM, and no first-run documents.
    """
    from ragloom_app.app import BaseApp
    from ragloom_app.ui.server import serve

    with stores_for(request) as stores:
        settings = stores.app_settings(tmp_path_factory.mktemp("ragloom-data"))
        settings.first_run_docs = None
        app = BaseApp(settings).start()
        running = serve(app, host="127.0.0.1", port=free_port(), first_run_docs=False, block=False)
        try:
            yield LiveUI(url=running.url, app=app, demo=running.demo)
        finally:
            running.close()
