"""Add files to a file index: check, deduplicate, store, chunk, embed and record them.

A file counts as indexed only once its chunks are in the database, Chroma and the
full-text store; until then its source row says ``indexing``. A failure removes what the
file had written and records the reason, and the next file goes on.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, delete, select

from ragloom.indexing import FileIngestor
from ragloom.loaders import LoaderError
from ragloom_app.db.models import ChunkRecord, Source, SourceStatus
from ragloom_app.index.base import FileOutcome, IndexingPipeline, IndexingProgress
from ragloom_app.index.file.names import UnsafeNameError, safe_display_name

__all__ = ["FileIndexingPipeline"]

logger = logging.getLogger(__name__)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FileIndexingPipeline(IndexingPipeline):
    """Indexes files into one file index (see the module docstring)."""

    def __init__(
        self,
        *,
        index_id: int,
        engine: Engine,
        ingestor: FileIngestor,
        files_dir: Path,
        extensions: Sequence[str],
        max_file_bytes: int,
        owner: str = "local",
    ) -> None:
        self.index_id = index_id
        self.engine = engine
        self.ingestor = ingestor
        self.files_dir = files_dir
        self.extensions = tuple(e.lower() for e in extensions)
        self.max_file_bytes = max_file_bytes
        self.owner = owner

    def stream(
        self, paths: Sequence[Path], *, reindex: bool = False, names: Sequence[str] | None = None
    ) -> Iterator[IndexingProgress | FileOutcome]:
        paths = [Path(p) for p in paths]
        shown = list(names) if names is not None else [p.name for p in paths]
        total = len(paths) or 1
        for position, (path, raw_name) in enumerate(zip(paths, shown, strict=True)):
            yield IndexingProgress(raw_name, position / total, "reading")
            outcome = self._index_one(path, raw_name, reindex)
            logger.info("%s: %s %s", outcome.name, outcome.status, outcome.reason or "")
            yield IndexingProgress(raw_name, (position + 1) / total, outcome.status)
            yield outcome
        # Build the full-text index now rather than on the first question after an upload.
        self.ingestor.fulltext_store.ensure_index()

    def _index_one(self, path: Path, raw_name: str, reindex: bool) -> FileOutcome:
        try:
            name = safe_display_name(raw_name)
        except UnsafeNameError as exc:
            return FileOutcome(raw_name[:120], "failed", reason=str(exc))
        problem = self._check_file(path, name)
        if problem:
            return FileOutcome(name, "failed", reason=problem)
        digest = _sha256(path)
        existing = self._find_by_hash(digest)
        if existing is not None and not reindex and existing.status == SourceStatus.INDEXED:
            return FileOutcome(
                name,
                "skipped",
                chunks=existing.chunk_count,
                reason=f"already indexed as {existing.name!r} (same content)",
                source_id=existing.id,
            )
        if existing is not None:
            self.remove(existing.id)
        return self._ingest(path, name, digest)

    def _check_file(self, path: Path, name: str) -> str | None:
        suffix = Path(name).suffix.lower()
        if suffix not in self.extensions:
            supported = ", ".join(sorted(self.extensions))
            return f"unsupported file type '{suffix or '(none)'}'; supported: {supported}"
        if not path.is_file():
            return "file not found"
        size = path.stat().st_size
        if size > self.max_file_bytes:
            return (
                f"file too large: {size / 1e6:.1f} MB, the limit is "
                f"{self.max_file_bytes / 1e6:.0f} MB"
            )
        return None

    def _find_by_hash(self, digest: str) -> Source | None:
        with Session(self.engine) as session:
            query = select(Source).where(Source.index_id == self.index_id, Source.sha256 == digest)
            return session.exec(query).first()

    def _ingest(self, path: Path, name: str, digest: str) -> FileOutcome:
        source_id = uuid.uuid4().hex
        stored = self.files_dir / f"{digest}{Path(name).suffix.lower()}"
        self.files_dir.mkdir(parents=True, exist_ok=True)
        if not stored.exists():
            shutil.copyfile(path, stored)
        source = Source(
            id=source_id,
            index_id=self.index_id,
            name=name,
            sha256=digest,
            size=stored.stat().st_size,
            owner=self.owner,
            status=SourceStatus.INDEXING,
            stored_path=str(stored),
        )
        with Session(self.engine) as session:
            session.add(source)
            session.commit()
        try:
            chunks = self.ingestor.chunk(stored, source_id, name)
            self.ingestor.store(chunks)
        except LoaderError as exc:
            self._fail(source_id, exc.reason)
            return FileOutcome(name, "failed", reason=exc.reason, source_id=source_id)
        except Exception as exc:
            logger.exception("indexing %s failed", name)
            reason = f"indexing failed: {type(exc).__name__}: {exc}"
            self._fail(source_id, reason)
            return FileOutcome(name, "failed", reason=reason, source_id=source_id)
        with Session(self.engine) as session:
            session.add_all(
                ChunkRecord(
                    id=c.id,
                    source_id=source_id,
                    index_id=self.index_id,
                    page=c.page,
                    start=c.start,
                    end=c.end,
                    text=c.text,
                )
                for c in chunks
            )
            record = session.get(Source, source_id)
            assert record is not None
            record.status = SourceStatus.INDEXED
            record.chunk_count = len(chunks)
            record.updated_at = datetime.now(UTC)
            session.add(record)
            session.commit()
        return FileOutcome(name, "indexed", chunks=len(chunks), source_id=source_id)

    def _fail(self, source_id: str, reason: str) -> None:
        """Undo what a file wrote to the stores and record why it failed."""
        self._remove_from_stores(source_id)
        with Session(self.engine) as session:
            record = session.get(Source, source_id)
            if record is not None:
                record.status = SourceStatus.FAILED
                record.reason = reason
                record.updated_at = datetime.now(UTC)
                session.add(record)
                session.commit()

    def _remove_from_stores(self, source_id: str) -> None:
        self.ingestor.vector_store.delete_source(source_id)
        self.ingestor.fulltext_store.delete_source(source_id)

    def remove(self, source_id: str) -> None:
        """Remove a source and its chunks from every store and the database."""
        self._remove_from_stores(source_id)
        with Session(self.engine) as session:
            session.exec(delete(ChunkRecord).where(ChunkRecord.source_id == source_id))
            record = session.get(Source, source_id)
            if record is not None:
                session.delete(record)
            session.commit()
