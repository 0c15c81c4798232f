"""At every start, finish what a process that died mid-way left in a file index.

What a crash can leave, given the write order of :mod:`.pipeline`: a source row still
``queued``, ``indexing`` or ``removing`` (with some of its chunks in Chroma or the
full-text store), a partial copy of an upload, a half-expanded archive. Only work that no
live process holds (:class:`WorkLock`) is touched, so starting ``ragloom index list``
while the UI indexes harms nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlmodel import Session, col, select

from ragloom_app.db.models import Source, SourceStatus
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file.archives import clean_stale_archives
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.worklock import WorkLock, is_busy

__all__ = ["UNFINISHED", "recover_index", "stale_partials", "take_over"]

logger = logging.getLogger(__name__)

#: Statuses a source passes through; one found in them with no live owner was interrupted.
UNFINISHED = (SourceStatus.QUEUED, SourceStatus.INDEXING, SourceStatus.REMOVING)

_PARTIAL = ".partial"


def recover_index(pipeline: FileIndexingPipeline) -> list[FileOutcome]:
    """Finish every interrupted source, then remove partial copies and archive folders.

    An interrupted source is indexed again from its stored copy when that is there and
    intact, else marked failed with :data:`~.pipeline.INTERRUPTED_REASON`; a removal cut
    short is finished. Returns the outcome of each source indexed again or failed.
    """
    with Session(pipeline.engine) as session:
        query = select(Source.id).where(
            Source.index_id == pipeline.index_id, col(Source.status).in_(UNFINISHED)
        )
        unfinished = list(session.exec(query.order_by(col(Source.created_at))))
    outcomes = [o for o in (take_over(pipeline, sid) for sid in unfinished) if o is not None]
    for partial in stale_partials(pipeline):
        partial.unlink(missing_ok=True)
    clean_stale_archives(pipeline.tmp_dir, pipeline.locks_dir)
    if outcomes:
        pipeline.ingestor.fulltext_store.ensure_index()
    return outcomes


def take_over(pipeline: FileIndexingPipeline, source_id: str) -> FileOutcome | None:
    """Finish one interrupted source; ``None`` if a live process holds it or it is done."""
    lock = WorkLock(pipeline.locks_dir, source_id)
    if not lock.acquire(blocking=False):
        return None
    try:
        # Read again under the lock: its worker may have finished just before letting go.
        with Session(pipeline.engine) as session:
            source = session.get(Source, source_id)
        if source is None or source.status not in UNFINISHED:
            return None
        logger.warning("%r was left %s by a process that stopped", source.name, source.status)
        try:
            return pipeline.reingest(source_id)
        except Exception:
            # One source must not keep the app from starting; `index check` reports it.
            logger.exception("could not recover %r", source.name)
            return None
    finally:
        lock.release()


def stale_partials(pipeline: FileIndexingPipeline) -> list[Path]:
    """Partial copies (``.<source id>.partial``) whose writer is gone."""
    files_dir = pipeline.files_dir
    if not files_dir.is_dir():
        return []
    return [
        path
        for path in sorted(files_dir.glob(f".*{_PARTIAL}"))
        if not is_busy(pipeline.locks_dir, path.name[1 : -len(_PARTIAL)])
    ]
