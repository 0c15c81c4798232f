"""The BM25 store's tests' fixtures: a store in a fresh folder, and one holding the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.stores import BM25Store
from tests.helpers.bm25_testkit import CORPUS


@pytest.fixture
def store(tmp_path: Path) -> BM25Store:
    return BM25Store(tmp_path / "bm25")


@pytest.fixture
def filled(store: BM25Store) -> BM25Store:
    store.add(CORPUS)
    return store
