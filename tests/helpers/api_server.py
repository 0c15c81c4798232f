"""A live Ragloom server for the API tests: real SQLite, Chroma and BM25, hash embeddings,
and a replay LLM that answers every question with the same cited sentence (the tests are
about the API's shape; every mode's answers on the real model are tested elsewhere)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings

__all__ = ["ANSWER", "DOCUMENTS", "LiveServer", "live_server"]

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


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from ragloom_app.ui.server import serve

    folder = tmp_path_factory.mktemp("api")
    settings = AppSettings(
        data_dir=folder / "data",
        llms={"replay": {"class": "ragloom.llms.replay.ReplayLLM", "replies": [ANSWER]}},
        default_llm="replay",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
    )
    settings.first_run_docs = None
    app = BaseApp(settings, plugin_manager=create_plugin_manager()).start()
    docs = folder / "docs"
    docs.mkdir()
    paths = []
    for name, text in DOCUMENTS.items():
        (docs / name).write_text(text, encoding="utf-8")
        paths.append(docs / name)
    outcomes = app.indices.get("My files").get_indexing_pipeline({}).run(paths)
    assert all(o.status == "indexed" for o in outcomes), outcomes
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    running = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield LiveServer(running.url, app)
    finally:
        running.close()
