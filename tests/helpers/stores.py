"""The two deployments a suite runs on: the laptop's embedded stores, then the servers.

A fixture parametrized with :data:`STORE_KINDS` gets its :class:`StoreSetup` from
:func:`stores_for`: the embedded stores (SQLite, Chroma on a folder, a BM25 file), then a
fresh PostgreSQL database on the run's cluster (with the full text in it; dropped
afterwards, with the connections the test's apps left open) and the run's ``chroma run``.
The servers' runs are marked ``postgres``, and skipped where PostgreSQL is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.helpers.file_index import StoreSetup

__all__ = ["STORE_KINDS", "stores_for"]

STORE_KINDS = ["embedded", pytest.param("servers", marks=pytest.mark.postgres)]
"""The ``params`` of a fixture that runs its tests on both deployments."""


@contextmanager
def stores_for(request: pytest.FixtureRequest) -> Iterator[StoreSetup]:
    """The stores of ``request.param`` (one of :data:`STORE_KINDS`), for the block."""
    # Imported here: a conftest may read STORE_KINDS without importing the app.
    from tests.helpers.file_index import EMBEDDED, StoreSetup
    from tests.helpers.postgres import database

    if request.param == "embedded":
        yield EMBEDDED
        return
    with database(request.getfixturevalue("postgres_server")) as url:
        chroma = request.getfixturevalue("shared_chroma_server").url
        yield StoreSetup("servers", database_url=url, chroma_server=chroma)
