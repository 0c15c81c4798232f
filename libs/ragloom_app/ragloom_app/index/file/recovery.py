"""Finish what a process that died mid-way left in a file index, without crash-looping.

What a crash can leave, given the write order of :mod:`.pipeline`: a source row still
``queued``, ``indexing`` or ``removing`` (with some of its chunks in Chroma or the
full-text store), a partial copy of an upload, a half-expanded archive. Two kinds of work
finish it, at different times:

- :func:`clean_leftovers` runs at every start (any ``ragloom`` command): it only deletes
  partial copies and expanded archive folders, which is quick and cannot crash.
- :func:`recover_index` indexes interrupted sources again. That is slow (it embeds), and
  what killed the process may kill it again, so it never runs at start, where it would
  keep every command from running: ``ragloom serve`` runs it in the background once the
  server listens (:meth:`~ragloom_app.app.BaseApp.recover_indices`), and ``ragloom index
  check --repair`` runs it for what it reports. A source is indexed again only while it
  has fewer than :data:`MAX_INDEXING_ATTEMPTS` started attempts; past that it is failed
  with :data:`GAVE_UP_REASON` and what it wrote is removed from the stores.

Only work that no live process holds (:class:`WorkLock`) is touched, so starting
``ragloom index list`` while the UI indexes harms nothing.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Protocol

from sqlmodel import Session, col, select

from ragloom_app.db.models import Source, SourceStatus
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file.archives import clean_stale_archives
from ragloom_app.index.file.attempts import GAVE_UP_REASON, MAX_INDEXING_ATTEMPTS
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.worklock import WorkLocks, clear_if_free, is_busy

__all__ = [
    "GAVE_UP_REASON",
    "HALF_IMPORTED",
    "IMPORT_LOCK",
    "MAX_INDEXING_ATTEMPTS",
    "UNFINISHED",
    "IndexFolders",
    "clean_leftovers",
    "recover_index",
    "shown_state",
    "stale_partials",
    "stored_elsewhere",
    "stored_here",
    "take_over",
]

logger = logging.getLogger(__name__)

#: Statuses a source passes through; one found in them with no live owner was interrupted.
UNFINISHED = (SourceStatus.QUEUED, SourceStatus.INDEXING, SourceStatus.REMOVING)

#: The lock an import holds on the index it makes until every file is in: found without
#: its holder, it marks an import killed outright (:mod:`.import_marks`).
IMPORT_LOCK = "import"

#: What ``index check`` says of an index an import killed outright left half made.
HALF_IMPORTED = (
    "an import into it stopped before every file was in (its process was killed): "
    "`ragloom index check --repair` deletes it; import the export again"
)

_RECOVERED_BY = "when `ragloom serve` starts, or by `ragloom index check --repair`"

_PARTIAL = ".partial"


class IndexFolders(Protocol):
    """Where a file index keeps stored files, lock files and temporary folders, and its
    work locks (a :class:`FileIndexingPipeline` is one, and so is a :class:`FileIndex`)."""

    @property
    def files_dir(self) -> Path: ...

    @property
    def locks_dir(self) -> Path: ...

    @property
    def tmp_dir(self) -> Path: ...

    @property
    def work_locks(self) -> WorkLocks: ...


def clean_leftovers(folders: IndexFolders) -> None:
    """Delete partial copies, expanded archive folders and lock files whose process is
    gone (but an import's mark, which says the import was cut short).

    Needs the folders only (no store, no model): it runs at every start and cannot fail
    for a reason of the index's configuration.
    """
    for partial in stale_partials(folders):
        partial.unlink(missing_ok=True)
    clean_stale_archives(folders.tmp_dir, folders.locks_dir)
    for lock in sorted(folders.locks_dir.glob("*.lock")):
        if lock.stem != IMPORT_LOCK:
            clear_if_free(folders.locks_dir, lock.stem)


def recover_index(pipeline: FileIndexingPipeline) -> list[FileOutcome]:
    """Finish every interrupted source no live process holds, oldest first.

    Each is indexed again from its stored copy (failed with
    :data:`~.pipeline.INTERRUPTED_REASON` if the copy is gone) or, at
    :data:`MAX_INDEXING_ATTEMPTS`, failed with :data:`GAVE_UP_REASON`; a removal cut
    short is finished. Returns the outcome of each source indexed again or failed.
    """
    with Session(pipeline.engine) as session:
        query = select(Source.id).where(
            Source.index_id == pipeline.index_id, col(Source.status).in_(UNFINISHED)
        )
        unfinished = list(session.exec(query.order_by(col(Source.created_at))))
    outcomes = [o for o in (take_over(pipeline, sid) for sid in unfinished) if o is not None]
    if outcomes:
        pipeline.ingestor.fulltext_store.ensure_index()
    return outcomes


def take_over(pipeline: FileIndexingPipeline, source_id: str) -> FileOutcome | None:
    """Finish one interrupted source; ``None`` if a live process holds it or it is done."""
    lock = pipeline.work_locks.lock(source_id)
    if not lock.acquire(blocking=False):
        return None
    try:
        # Read again under the lock: its worker may have finished just before letting go.
        with Session(pipeline.engine) as session:
            source = session.get(Source, source_id)
        if source is None or source.status not in UNFINISHED:
            return None
        if stored_elsewhere(source, pipeline):
            return None  # only a process of the folder that stored it has its copy
        try:
            return _finish(pipeline, source)
        except Exception:
            # One source must not stop the others; `index check` reports it.
            logger.exception("could not recover %r", source.name)
            return None
    finally:
        lock.release()


def _finish(pipeline: FileIndexingPipeline, source: Source) -> FileOutcome:
    if source.status != SourceStatus.REMOVING and source.attempts >= MAX_INDEXING_ATTEMPTS:
        logger.warning(
            "%r: indexing stopped %d times without finishing; failed, not tried again",
            source.name,
            source.attempts,
        )
        pipeline.unindex(source.id, GAVE_UP_REASON)
        return FileOutcome(source.name, "failed", reason=GAVE_UP_REASON, source_id=source.id)
    logger.warning(
        "%r was left %s by a process that stopped; finishing it (attempt %d of %d)",
        source.name,
        source.status,
        source.attempts + 1,
        MAX_INDEXING_ATTEMPTS,
    )
    return pipeline.reingest(source.id)


def _real_folder(folder: Path) -> Path:
    """``folder`` resolved (a relative one from the working folder as it is now)."""
    return _resolved(folder.absolute())


@functools.cache
def _resolved(folder: Path) -> Path:
    # Once a process for each absolute folder: the folders of stored copies are few and
    # stay where they are, and a check of many files would resolve one per file (0.1 ms).
    return folder.resolve()


def stored_here(path: str | Path, folders: IndexFolders) -> bool:
    """Whether ``path`` is in ``folders``' folder of stored copies (this data folder's),
    however either is written (a relative data folder, named absolutely another time)."""
    return _real_folder(Path(path).parent) == _real_folder(folders.files_dir)


def stored_elsewhere(source: Source, folders: IndexFolders) -> bool:
    """Whether ``source`` was stored through another data folder than ``folders``'.

    Processes with data folders of their own (app processes sharing PostgreSQL and a
    Chroma server) see each other's sources. One such source left unfinished is left to a
    process of that data folder, as reindexing it is: only there is its stored copy.
    Whether its process is alive, only shared work locks tell (:mod:`.worklock`).
    """
    if not source.stored_path:
        return False
    return not stored_here(source.stored_path, folders)


def shown_state(source: Source, folders: IndexFolders) -> tuple[str, str | None]:
    """The status and reason a listing shows for ``source``.

    A source a stopped process left ``queued`` or ``indexing`` is shown ``queued``: it
    waits for the recovery, and the reason says when that runs and what it will do. One
    a live process works on is shown as it is, and so is one of another data folder's
    when that folder's locks are not seen from here.
    """
    status, reason = str(source.status), source.reason
    locks = folders.work_locks
    if source.status not in UNFINISHED or locks.is_busy(source.id):
        return status, reason
    if stored_elsewhere(source, folders):
        if locks.shared is None:
            return status, reason
        there = f"by a process of that folder {_RECOVERED_BY}"
        if source.status == SourceStatus.REMOVING:
            return status, f"removal interrupted in another data folder; finished {there}"
        queued = str(SourceStatus.QUEUED)
        return queued, f"interrupted in another data folder; indexed again {there}"
    if source.status == SourceStatus.REMOVING:
        return status, f"removal interrupted; finished {_RECOVERED_BY} (or remove it again)"
    if source.attempts >= MAX_INDEXING_ATTEMPTS:
        return str(SourceStatus.QUEUED), (
            f"interrupted {source.attempts} times; marked failed, not tried again, {_RECOVERED_BY}"
        )
    return str(SourceStatus.QUEUED), f"interrupted; indexed again {_RECOVERED_BY}"


def stale_partials(folders: IndexFolders) -> list[Path]:
    """Partial copies (``.<source id>.partial``) whose writer is gone."""
    files_dir = folders.files_dir
    if not files_dir.is_dir():
        return []
    return [
        path
        for path in sorted(files_dir.glob(f".*{_PARTIAL}"))
        if not is_busy(folders.locks_dir, path.name[1 : -len(_PARTIAL)])
    ]
