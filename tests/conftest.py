"""Settings every test shares: the hypothesis profiles of the property-based tests, the
database a test of the stores runs on (``database_url``: SQLite, then PostgreSQL), the
deployment an app's test runs on (``stores``: embedded, then the servers), and the servers
of a run (PostgreSQL, ``chroma run``), started once when a test needs them.

By default (profile ``ragloom``) each property test runs the same examples every time,
derived from the test itself: a red run in CI is a real regression, reproduced by running
the test again, never a new random find that blocks an unrelated change. To search for new
failures, run ``pytest tests --hypothesis-profile=explore`` (random examples; 1,000 of them
where a test does not choose its own number) and turn what it finds into a test of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.postgres import PostgresServer, database, postgres_bin, throwaway_postgres
from tests.helpers.stores import STORE_KINDS, stores_for

if TYPE_CHECKING:
    from tests.helpers.file_index import StoreSetup

settings.register_profile("ragloom", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile("ragloom")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster on loopback for the whole run (skipped without one)."""
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (scripts/ensure-postgres)")
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def shared_chroma_server() -> Iterator[ChromaServer]:
    """A ``chroma run`` on loopback for the whole run: every index's collection has a name
    of its own, so the tests' apps, each with its own database, share it."""
    with chroma_server() as server:
        yield server


@pytest.fixture(params=STORE_KINDS)
def stores(request: pytest.FixtureRequest) -> Iterator[StoreSetup]:
    """The embedded stores, then the servers (``tests.helpers.stores``): a test that asks
    for it runs on both deployments."""
    with stores_for(request) as setup:
        yield setup


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty app database: a SQLite file, then a fresh PostgreSQL database (dropped
    afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'app.db'}"
        return
    with database(request.getfixturevalue("postgres_server")) as url:
        yield url


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a module that has a test of the real model ``llm`` too, so that
    ``-m llm`` and ``-m "not llm"`` take or leave whole modules: a module's fixtures are
    then made once, and a test that builds on the one before it (as a user's steps do)
    finds it done. ``make test`` runs ``-m "not llm"`` in two processes, then ``-m llm``
    alone: llama.cpp next to any other busy process on 2 cores ran 4x slower."""
    modules_with_llm = {_module(item) for item in items if item.get_closest_marker("llm")}
    for item in items:
        if _module(item) in modules_with_llm and not item.get_closest_marker("llm"):
            item.add_marker(pytest.mark.llm)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]
