"""A live Ragloom server for the API tests: real SQLite, Chroma and BM25, hash embeddings,
and a replay LLM that answers every question with the same cited sentence (the tests are
about the API's shape; every mode's answers on the real model are tested elsewhere)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings
from tests.helpers.ports import free_port
from tests.helpers.stores import STORE_KINDS

__all__ = [
    "ANSWER",
    "DOCUMENTS",
    "LiveServer",
    "api",
    "index_documents",
    "live_server",
    "replay_app",
    "served",
    "sse_events",
]

ANSWER = "The Zorblax reactor runs at 451 kelvin [1]."
DOCUMENTS = {
    "reactor.md": "The Zorblax reactor runs at 451 kelvin. It was commissioned in 1962.",
    "canteen.md": "The canteen opens at eight and serves soup on Fridays.",
}


@dataclass
class LiveServer:
    """The server's base URL (ending in ``/``) and its app."""

    url: str
    app: BaseApp


def replay_app(folder: Path, answer: str = ANSWER, **settings: Any) -> BaseApp:
    """A started app in ``folder`` whose LLM replays ``answer``, with hash embeddings;
    ``settings`` are further :class:`AppSettings` fields."""
    values = AppSettings(
        data_dir=folder / "data",
        llms={"replay": {"class": "ragloom.llms.replay.ReplayLLM", "replies": [answer]}},
        default_llm="replay",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
        **settings,
    )
    values.first_run_docs = None
    return BaseApp(values, plugin_manager=create_plugin_manager()).start()


@contextmanager
def served(app: BaseApp) -> Iterator[str]:
    """``app`` served as ``ragloom serve`` serves it, on a free loopback port; its URL."""
    from ragloom_app.ui.server import serve

    running = serve(app, port=free_port(), first_run_docs=False, block=False, warm_up=False)
    try:
        yield running.url
    finally:
        running.close()


@pytest.fixture(scope="module", params=STORE_KINDS)
def live_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """The app on the laptop's embedded stores (SQLite, embedded Chroma, a BM25 file), then
    on servers (PostgreSQL with the full text, ``chroma run``): every API test runs on both."""
    with ExitStack() as stack:
        servers: dict[str, Any] = {}
        if request.param == "servers":
            from tests.helpers.postgres import database

            postgres = request.getfixturevalue("postgres_server")
            servers["database_url"] = stack.enter_context(database(postgres))
            servers["chroma_server"] = request.getfixturevalue("shared_chroma_server").url
        yield _live_server(tmp_path_factory.mktemp("api"), servers, stack)


def _live_server(folder: Path, servers: dict[str, Any], stack: ExitStack) -> LiveServer:
    """The app in ``folder`` with :data:`DOCUMENTS` indexed, served until ``stack`` closes
    (before the database it runs on is dropped)."""
    app = replay_app(folder, **servers)
    index_documents(app, folder / "docs")
    return LiveServer(stack.enter_context(served(app)), app)


def index_documents(app: BaseApp, folder: Path) -> None:
    """Write :data:`DOCUMENTS` into ``folder`` (made if missing) and index them in ``app``'s
    "My files"; each one indexed, or an assertion."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
        paths.append(folder / name)
    outcomes = app.indices.get("My files").get_indexing_pipeline({}).run(paths)
    assert all(o.status == "indexed" for o in outcomes), outcomes


@pytest.fixture
def api(live_server: LiveServer) -> httpx.Client:
    """A client of ``live_server``'s ``/api/v1``."""
    return httpx.Client(base_url=f"{live_server.url}api/v1", timeout=30)


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` of each server-sent event in ``text``, in order."""
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events
