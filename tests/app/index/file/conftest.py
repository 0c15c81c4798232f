"""The stores the file index's tests run on: the embedded ones, then the servers.

A test whose ``index`` fixture asks for ``stores`` runs twice: on the laptop's defaults
(SQLite, Chroma on a folder, a BM25 file), then on PostgreSQL with the full text in it and
a ``chroma run`` (marked ``postgres``): the pipeline's invariants hold on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.settings import AppSettings
from tests.helpers.file_index import EMBEDDED, StoreSetup
from tests.helpers.postgres import database
from tests.helpers.recovery import REACTOR


@pytest.fixture(params=["embedded", pytest.param("servers", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest) -> Iterator[StoreSetup]:
    """The embedded stores, then a fresh PostgreSQL database (dropped afterwards, with the
    connections the test's apps left open) and the run's Chroma server."""
    if request.param == "embedded":
        yield EMBEDDED
        return
    with database(request.getfixturevalue("postgres_server")) as url:
        chroma = request.getfixturevalue("shared_chroma_server").url
        yield StoreSetup("servers", database_url=url, chroma_server=chroma)


@pytest.fixture
def settings(tmp_path: Path, stores: StoreSetup) -> AppSettings:
    """An app's settings: a data folder of its own, on ``stores``."""
    return stores.app_settings(tmp_path / "data")


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    """``reactor.md``, a small Markdown file to index."""
    path = tmp_path / "reactor.md"
    path.write_text(REACTOR)
    return path
