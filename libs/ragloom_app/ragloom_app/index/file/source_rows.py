"""The database side of a file index's sources: a source's status, and its chunk rows.

The pipeline writes the stores; these are the transactions that make what it wrote count
(the flip to ``indexed`` with the chunk rows, in one) or stop counting (a status change,
the chunk rows' deletion). See the invariants in :mod:`ragloom_app.index.file.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, delete, select

from ragloom.schema import Chunk
from ragloom_app.db.models import ChunkRecord, Source, SourceStatus

__all__ = ["Flip", "delete_chunk_rows", "now", "record_indexed", "set_status"]


def now() -> datetime:
    """The time a row is stamped with (UTC)."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class Flip:
    """What :func:`record_indexed` did to a source and to the others of its content."""

    done: bool
    """Whether the source was marked indexed; ``False`` (and nothing written) if it no
    longer said ``indexing`` (a removal won)."""
    replaced: tuple[str, ...] = ()
    """The ids of the other sources of the same content, marked ``removing`` in the
    flip's transaction, for the caller to finish removing."""


def record_indexed(engine: Engine, index_id: int, source_id: str, chunks: Sequence[Chunk]) -> Flip:
    """Record the chunks and mark the source indexed, in one transaction.

    The other sources of the index with the same content (the version a reindex replaces,
    a failed attempt) are marked ``removing`` in the same transaction, so the index never
    lists two indexed copies of a file and a crash right after leaves their removal to
    the recovery: they are :attr:`Flip.replaced`, for the caller to finish removing. (Until
    then their chunks are still in the stores, which searches do not filter by status.)
    One still ``indexing`` is left alone: its process, or the recovery, finishes it.
    """
    with Session(engine) as session:
        digest = session.exec(select(Source.sha256).where(col(Source.id) == source_id)).first()
        result = session.exec(
            update(Source)
            .where(col(Source.id) == source_id, col(Source.status) == SourceStatus.INDEXING)
            .values(
                status=SourceStatus.INDEXED,
                chunk_count=len(chunks),
                reason=None,
                updated_at=now(),
            )
        )
        if result.rowcount != 1:
            session.rollback()
            return Flip(done=False)
        replaced = tuple(
            session.exec(
                select(Source.id).where(
                    col(Source.index_id) == index_id,
                    col(Source.sha256) == digest,
                    col(Source.id) != source_id,
                    col(Source.status) != SourceStatus.INDEXING,
                )
            )
        )
        if replaced:
            session.exec(
                update(Source)
                .where(col(Source.id).in_(replaced))
                .values(status=SourceStatus.REMOVING, chunk_count=0, reason=None, updated_at=now())
            )
        session.add_all(
            ChunkRecord(
                id=c.id,
                source_id=source_id,
                index_id=index_id,
                page=c.page,
                start=c.start,
                end=c.end,
                text=c.text,
            )
            for c in chunks
        )
        session.commit()
    return Flip(done=True, replaced=replaced)


def set_status(
    engine: Engine,
    source_id: str,
    status: SourceStatus,
    reason: str | None,
    *,
    only_if: SourceStatus | None = None,
) -> bool:
    """Set a source's status (only from ``only_if`` if given); ``False`` if not set."""
    query = update(Source).where(col(Source.id) == source_id)
    if only_if is not None:
        query = query.where(col(Source.status) == only_if)
    values: dict[str, Any] = {"status": status, "reason": reason, "updated_at": now()}
    if status != SourceStatus.INDEXED:
        values["chunk_count"] = 0
    with Session(engine) as session:
        changed = session.exec(query.values(**values)).rowcount == 1
        session.commit()
    return changed


def delete_chunk_rows(target: Engine | Session, source_id: str) -> None:
    """Delete a source's chunk rows: in their own transaction given an engine, or as part
    of the caller's given its session (which commits)."""
    statement = delete(ChunkRecord).where(col(ChunkRecord.source_id) == source_id)
    if isinstance(target, Session):
        target.exec(statement)
        return
    with Session(target) as session:
        session.exec(statement)
        session.commit()
