"""The file index's tests run on the stores of the ``stores`` fixture (tests/conftest.py):
a test whose ``index`` asks for it runs twice, on the laptop's defaults (SQLite, Chroma on
a folder, a BM25 file), then on PostgreSQL with the full text in it and a ``chroma run``
(marked ``postgres``): the pipeline's invariants hold on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom_app.index.file import FileIndex
from ragloom_app.settings import AppSettings
from tests.helpers.file_index import StoreSetup, hash_file_index
from tests.helpers.recovery import REACTOR


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


@pytest.fixture
def index(tmp_path: Path, stores: StoreSetup) -> FileIndex:
    """A file index on ``stores``, with hash embeddings (a module may define its own)."""
    return hash_file_index(tmp_path / "data", setup=stores)
