"""Fixtures of the index tests that run against servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.chroma_server import ChromaServer, chroma_server


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaServer]:
    """A ``chroma run`` on loopback for the module's tests: each index's collections have
    names of their own (``IndexRecord.store_name``), so tests share it."""
    with chroma_server() as running:
        yield running
