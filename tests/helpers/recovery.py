"""What the recovery tests share: the app started (again) over one data folder, and the
one source row of its index as the database holds it."""

from __future__ import annotations

from sqlmodel import Session, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import Source
from ragloom_app.index.file import FileIndex
from ragloom_app.settings import AppSettings

__all__ = ["REACTOR", "raw_source", "start_app", "start_index"]

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n\nIt was built in Lund in 2019.\n"


def start_app(settings: AppSettings) -> BaseApp:
    """Start the app (again) over the same data, as every command does."""
    return BaseApp(settings).start()


def start_index(settings: AppSettings) -> FileIndex:
    """The one file index of the app started (again) over the same data."""
    (index,) = start_app(settings).indices.indices
    assert isinstance(index, FileIndex)
    return index


def raw_source(index: FileIndex) -> Source:
    """The index's only source, as its row is now."""
    with Session(index.resources.engine) as session:
        (source,) = session.exec(select(Source))
        return source
