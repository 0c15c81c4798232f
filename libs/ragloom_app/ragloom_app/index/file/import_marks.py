"""Whether an import is filling a file index, or died doing it, as every process sees it.

``ragloom index import`` makes a new index, private to its owner, and fills it. Until
every file is in, it holds two marks:

- the lock :data:`IMPORT_LOCK` of the index, made locked (:meth:`WorkLock.acquire_new`):
  a file in the importing process's data folder and, on PostgreSQL, an advisory lock
  that its database session holds, which every process of the deployment sees;
- the index's row names the import (``IndexRecord.importing_by``, a hold named as
  :mod:`ragloom_app.conversation_holds` names them): what a process of another data
  folder sees on SQLite too.

The row is marked once the lock is held and cleared before it is let go of; the import
deletes the index if it fails. An import killed outright (SIGKILL, power lost) leaves
the marks, and nothing holds them: the index is half made, and ``ragloom index check
--repair`` deletes it. Whose the mark is decides how that is known: this data folder's
(the lock file, nobody holding it), a dead process of this machine (the hold names it),
or, on PostgreSQL, any process whose advisory lock is gone. Another machine's import on
SQLite cannot be told dead from here (no such deployment shares a SQLite file): it is
left "under way" for its own data folder's processes to judge.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select, update

from ragloom_app.conversation_holds import is_of_this_machine, is_stale
from ragloom_app.db.models import IndexRecord
from ragloom_app.index.file.recovery import IMPORT_LOCK, IndexFolders
from ragloom_app.index.file.worklock import is_busy

__all__ = ["import_mark", "import_state", "mark_import"]


def mark_import(engine: Engine, index_id: int, holder: str | None) -> None:
    """Name ``holder`` as the import filling the index ``index_id`` (``None``: none is)."""
    with Session(engine) as session:
        session.exec(
            update(IndexRecord).where(col(IndexRecord.id) == index_id).values(importing_by=holder)
        )
        session.commit()


def import_mark(engine: Engine, index_id: int) -> str | None:
    """The import the row of the index ``index_id`` names, if any."""
    with Session(engine) as session:
        return session.exec(
            select(IndexRecord.importing_by).where(col(IndexRecord.id) == index_id)
        ).first()


def import_state(folders: IndexFolders, engine: Engine, index_id: int) -> str | None:
    """``"under way"`` while an import fills the index, ``"interrupted"`` once the process
    importing it died before every file was in (nothing could delete the half-made
    index), ``None`` for an index no import is making."""
    local = _state_in_this_folder(folders)
    if local is not None:
        return local
    holder = import_mark(engine, index_id)
    if holder is None:
        return None
    if folders.work_locks.is_busy(IMPORT_LOCK) or not _known_gone(
        holder, shared=folders.work_locks.shared is not None
    ):
        return "under way"
    # Looked at again: an import that ends clears its mark before it lets go of its lock
    # and before its process ends.
    return "interrupted" if import_mark(engine, index_id) == holder else None


def _state_in_this_folder(folders: IndexFolders) -> str | None:
    """The import state the lock file in this data folder tells, if there is one."""
    mark = folders.locks_dir / f"{IMPORT_LOCK}.lock"
    if not mark.exists():
        return None
    if is_busy(folders.locks_dir, IMPORT_LOCK):
        return "under way"
    # Looked at again: an import that ends removes its mark before it lets go of it.
    return "interrupted" if mark.exists() else None


def _known_gone(holder: str, *, shared: bool) -> bool:
    """Whether the import ``holder``, its lock found free, is known to have stopped: its
    process is dead on this machine, or its lock is one every process sees (``shared``),
    held by its database session while it ran."""
    return is_stale(holder) or (shared and not is_of_this_machine(holder))
