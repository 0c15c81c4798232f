"""Add files to a file index: check, deduplicate, store, chunk, embed and record them.

Invariants (``ragloom index check`` verifies them; docs/cli.md):

- A source counts as indexed only once its chunks are in Chroma, the full-text store and
  the database. Writes go in that order: the source row (``indexing``), the stored copy,
  Chroma, the full-text store, and last, in one database transaction, the chunk rows with
  the flip to ``indexed``. The flip only happens if the row still says ``indexing``, so a
  removal that started meanwhile wins.
- Hence a chunk in a store whose source is not ``indexed`` exists only between the store
  write and the flip, or after a crash there. A failure removes it at once; after a crash
  the recovery does (:mod:`ragloom_app.index.file.recovery`, run in the background once
  ``ragloom serve`` listens, or by ``index check --repair``), because the row still says
  ``indexing`` and no live process holds the source's :class:`WorkLock`.
- Each start of a source's indexing is counted (``Source.attempts``) before any reading,
  so a file that keeps killing the process is failed instead of retried forever.
- The stored copy is named by content hash and written to a temporary name first, so it
  is complete or absent; the recovery resumes an interrupted source from it.
- A removal marks the row ``removing``, then empties the stores, then deletes the rows:
  a removal cut short is finished by the recovery.

A ``.zip`` upload is expanded in a private folder and each member becomes a source of its
own, named ``archive.zip/folder/member.md``.

Each file is read and chunked in the readers sandbox within its own budgets of chunks and
time (:mod:`ragloom.chunking`); each call of :meth:`FileIndexingPipeline.stream` (one
upload) also has a budget of bytes and chunks for all its files (:mod:`.budget`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ragloom.chunking import PER_FILE
from ragloom.indexing import FileIngestor
from ragloom.loaders import LoaderError
from ragloom.loaders.archive import ZipLimits
from ragloom.sandbox import SandboxStopped
from ragloom.schema import Chunk
from ragloom_app.db.models import Source, SourceStatus
from ragloom_app.errors import user_error
from ragloom_app.index.base import FileOutcome, IndexingPipeline, IndexingProgress
from ragloom_app.index.budget import MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS, UploadBudget
from ragloom_app.index.file.archives import ARCHIVE_SUFFIXES, index_archive, shown_member_name
from ragloom_app.index.file.attempts import attempt_underway, start_attempt
from ragloom_app.index.file.disk import disk_full_reason, reference_of
from ragloom_app.index.file.names import UnsafeNameError, safe_display_name
from ragloom_app.index.file.source_rows import delete_chunk_rows, record_indexed, set_status
from ragloom_app.index.file.worklock import WorkLock, is_busy

__all__ = ["INTERRUPTED_REASON", "FileIndexingPipeline", "sha256_of"]

logger = logging.getLogger(__name__)

#: Why a source is failed when a crash cut its indexing short and its copy is gone.
INTERRUPTED_REASON = "interrupted while indexing; add the file again"

_Event = IndexingProgress | FileOutcome


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FileIndexingPipeline(IndexingPipeline):
    """Indexes files into one file index (see the module docstring).

    ``data_dir`` is the index's own folder (default: the parent of ``files_dir``); the
    pipeline keeps its lock files and temporary folders there, never elsewhere. Each
    upload may spend ``max_upload_bytes`` and ``max_upload_chunks``; archives are
    expanded within ``archive_limits``.
    """

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
        data_dir: Path | None = None,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
        max_upload_chunks: int = MAX_UPLOAD_CHUNKS,
        archive_limits: ZipLimits | None = None,
    ) -> None:
        self.index_id = index_id
        self.engine = engine
        self.ingestor = ingestor
        self.files_dir = files_dir
        self.extensions = tuple(e.lower() for e in extensions)
        self.max_file_bytes = max_file_bytes
        self.owner = owner
        self.data_dir = data_dir if data_dir is not None else files_dir.parent
        self.max_upload_bytes = max_upload_bytes
        self.max_upload_chunks = max_upload_chunks
        self.archive_limits = archive_limits or ZipLimits()

    @property
    def locks_dir(self) -> Path:
        """Lock files of work in progress (see :mod:`.worklock`)."""
        return self.data_dir / "locks"

    @property
    def tmp_dir(self) -> Path:
        """Temporary folders (expanded archives), removed after use."""
        return self.data_dir / "tmp"

    # -- adding files ----------------------------------------------------------------------
    def stream(
        self, paths: Sequence[Path], *, reindex: bool = False, names: Sequence[str] | None = None
    ) -> Iterator[_Event]:
        paths = [Path(p) for p in paths]
        shown = list(names) if names is not None else [p.name for p in paths]
        total = len(paths) or 1
        budget = UploadBudget(self.max_upload_bytes, self.max_upload_chunks)
        for position, (path, raw_name) in enumerate(zip(paths, shown, strict=True)):
            start, end = position / total, (position + 1) / total
            yield IndexingProgress(raw_name, start, "reading")
            for event in self._index_upload(path, raw_name, reindex, start, end, budget):
                if isinstance(event, FileOutcome):
                    logger.info("%s: %s %s", event.name, event.status, event.reason or "")
                yield event
        # Build the full-text index now rather than on the first question after an upload.
        self.ingestor.fulltext_store.ensure_index()

    def _index_upload(
        self,
        path: Path,
        raw_name: str,
        reindex: bool,
        start: float,
        end: float,
        budget: UploadBudget,
    ) -> Iterator[_Event]:
        try:
            name = safe_display_name(raw_name)
        except UnsafeNameError as exc:
            shown = shown_member_name(raw_name, 120)
            yield IndexingProgress(shown, end, "failed")
            yield FileOutcome(shown, "failed", reason=str(exc))
            return
        if Path(name).suffix.lower() in ARCHIVE_SUFFIXES and not self._check_file(path, name):
            yield from self._index_archive(path, name, reindex, (start, end), budget)
        else:
            outcome = self._index_file(path, name, reindex, budget)
            yield IndexingProgress(outcome.name, end, outcome.status)
            yield outcome

    def _index_archive(
        self,
        path: Path,
        name: str,
        reindex: bool,
        span: tuple[float, float],
        budget: UploadBudget,
    ) -> Iterator[_Event]:
        """Index each member of an uploaded zip; the zip and its expansion spend bytes."""
        over = budget.spend_file(path)
        if over:
            yield IndexingProgress(name, span[1], "failed")
            yield FileOutcome(name, "failed", reason=over)
            return
        yield from index_archive(
            path,
            name,
            lambda member, shown: self._index_file(member, shown, reindex, budget, False),
            tmp_root=self.tmp_dir,
            locks_dir=self.locks_dir,
            span=span,
            limits=self.archive_limits,
            budget=budget,
        )

    def _chunk_within(
        self, stored: Path, source_id: str, name: str, budget: UploadBudget | None
    ) -> list[Chunk]:
        """The file's chunks, within its own limit and what the upload has left."""
        per_file = int(self.ingestor.max_chunks)
        limit, limit_name = budget.chunk_limit(per_file) if budget else (per_file, PER_FILE)
        chunks = self.ingestor.chunk(
            stored, source_id, name, max_chunks=limit, chunk_limit_name=limit_name
        )
        if budget is not None:
            budget.spend_chunks(len(chunks))
        return chunks

    # -- one file --------------------------------------------------------------------------
    def _index_file(
        self,
        path: Path,
        name: str,
        reindex: bool,
        budget: UploadBudget | None = None,
        spend_bytes: bool = True,
    ) -> FileOutcome:
        """Index one file; an archive's members have spent their bytes already.

        A file skipped as already indexed spends nothing of the upload's budget.
        """
        problem = self._check_file(path, name)
        if problem:
            return FileOutcome(name, "failed", reason=problem)
        digest = sha256_of(path)
        existing = self._find_by_hash(digest)
        if existing is not None:
            if existing.status == SourceStatus.INDEXED and not reindex:
                return FileOutcome(
                    name,
                    "skipped",
                    chunks=existing.chunk_count,
                    reason=f"already indexed as {existing.name!r} (same content)",
                    source_id=existing.id,
                )
            if is_busy(self.locks_dir, existing.id):
                return FileOutcome(
                    name,
                    "skipped",
                    reason=f"being indexed right now as {existing.name!r} (same content)",
                    source_id=existing.id,
                )
        if budget is not None:
            over = budget.spend_file(path) if spend_bytes else budget.used_up()
            if over:
                return FileOutcome(name, "failed", reason=over)
        if existing is not None:
            self.remove(existing.id)
        return self._ingest(path, name, digest, budget)

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

    def _ingest(
        self, path: Path, name: str, digest: str, budget: UploadBudget | None = None
    ) -> FileOutcome:
        source_id = uuid.uuid4().hex
        stored = self.files_dir / f"{digest}{Path(name).suffix.lower()}"
        # Held until the final status is committed: while it is held, no other process
        # takes this source for one a crash left behind.
        with WorkLock(self.locks_dir, source_id):
            with Session(self.engine) as session:
                session.add(
                    Source(
                        id=source_id,
                        index_id=self.index_id,
                        name=name,
                        sha256=digest,
                        size=path.stat().st_size,
                        owner=self.owner,
                        status=SourceStatus.INDEXING,
                        stored_path=str(stored),
                        attempts=1,  # committed before any reading: see .attempts
                    )
                )
                session.commit()
            with attempt_underway(self.engine, source_id):
                try:
                    self._keep_copy(path, stored, source_id)
                except OSError as exc:
                    reason = f"could not store the file: {exc.strerror or exc}"
                    self._fail(source_id, reason)
                    return FileOutcome(name, "failed", reason=reason, source_id=source_id)
                return self._run_ingest(source_id, stored, name, budget)

    def _keep_copy(self, path: Path, stored: Path, source_id: str) -> None:
        """Copy the upload to its content-addressed place, complete or not at all."""
        if stored.is_file() and stored.stat().st_size == path.stat().st_size:
            return
        self.files_dir.mkdir(parents=True, exist_ok=True)
        partial = self.partial_path(source_id)
        try:
            shutil.copyfile(path, partial)
            os.replace(partial, stored)
        finally:
            partial.unlink(missing_ok=True)

    def partial_path(self, source_id: str) -> Path:
        """Where the copy of ``source_id``'s file is written before it is renamed."""
        return self.files_dir / f".{source_id}.partial"

    def _run_ingest(
        self, source_id: str, stored: Path, name: str, budget: UploadBudget | None = None
    ) -> FileOutcome:
        """Chunk, embed and store a source whose row says ``indexing``, then flip it."""
        try:
            chunks = self._chunk_within(stored, source_id, name, budget)
            self.ingestor.store(chunks)
            flipped = self._flip(source_id, chunks)
        except SandboxStopped:
            raise  # the app is stopping: nothing is known of the file (see .attempts)
        except LoaderError as exc:
            self._fail(source_id, exc.reason)
            return FileOutcome(name, "failed", reason=exc.reason, source_id=source_id)
        except Exception as exc:
            # Not a reason written for the user (a store or database failing): its words
            # and a log reference, the exception itself in the log. A store that fails on
            # a full disk rarely says so (Chroma: "Error in compaction"): the disk does.
            reason = user_error(exc, f"Indexing {name!r}", log=logger).message
            full = disk_full_reason(self.data_dir)
            if full:
                reason = f"{reason.split(':', 1)[0]}: {full}{reference_of(reason)}"
            self._fail(source_id, reason)
            return FileOutcome(name, "failed", reason=reason, source_id=source_id)
        if not flipped:
            # Removed (or taken over) while we worked: what we wrote must not stay.
            self._remove_from_stores(source_id)
            reason = "removed while it was being indexed"
            return FileOutcome(name, "failed", reason=reason, source_id=source_id)
        return FileOutcome(name, "indexed", chunks=len(chunks), source_id=source_id)

    def _flip(self, source_id: str, chunks: Sequence[Chunk]) -> bool:
        """Record the chunks and mark the source indexed, in one transaction."""
        return record_indexed(self.engine, self.index_id, source_id, chunks)

    def _set_status(
        self,
        source_id: str,
        status: SourceStatus,
        reason: str | None,
        *,
        only_if: SourceStatus | None = None,
    ) -> bool:
        """Set a source's status (only from ``only_if`` if given); ``False`` if not set."""
        return set_status(self.engine, source_id, status, reason, only_if=only_if)

    def _fail(self, source_id: str, reason: str) -> None:
        """Undo what a file wrote to the stores and record why it failed.

        The failure is recorded even when the undoing fails too (a store that is down is
        often why the file failed): what a store may still hold of it is no source's, and
        ``ragloom index check --repair`` deletes it.
        """
        try:
            self._remove_from_stores(source_id)
        except Exception:
            logger.warning(
                "could not take %s out of the stores; `ragloom index check --repair` will",
                source_id,
                exc_info=True,
            )
        self._set_status(source_id, SourceStatus.FAILED, reason, only_if=SourceStatus.INDEXING)

    def _remove_from_stores(self, source_id: str) -> None:
        self.ingestor.vector_store.delete_source(source_id)
        self.ingestor.fulltext_store.delete_source(source_id)

    # -- recovery and repair (called by .consistency with the source's WorkLock held) ------
    def reingest(self, source_id: str, *, lost_reason: str = INTERRUPTED_REASON) -> FileOutcome:
        """Index a source again from its stored copy, or fail it with ``lost_reason``.

        For a source a crash interrupted, or one the stores lost chunks of. Whatever it
        had written is removed first. A source being removed is removed instead.
        """
        with Session(self.engine) as session:
            source = session.get(Source, source_id)
        if source is None:
            return FileOutcome(source_id, "failed", reason="no such source")
        if source.status == SourceStatus.REMOVING:
            self.remove(source_id)
            return FileOutcome(source.name, "failed", reason="removed", source_id=source_id)
        # Not indexed from here on, so the chunks about to be deleted are never missed.
        start_attempt(self.engine, source)
        with attempt_underway(self.engine, source_id):
            self._remove_from_stores(source_id)
            delete_chunk_rows(self.engine, source_id)
            self.partial_path(source_id).unlink(missing_ok=True)
            stored = Path(source.stored_path) if source.stored_path else None
            if stored is not None and stored.is_file() and sha256_of(stored) == source.sha256:
                logger.info("indexing %s again from its stored copy", source.name)
                return self._run_ingest(source_id, stored, source.name)
            logger.warning("%s: no stored copy to index again from", source.name)
            self._set_status(source_id, SourceStatus.FAILED, lost_reason)
            return FileOutcome(source.name, "failed", reason=lost_reason, source_id=source_id)

    def unindex(self, source_id: str, reason: str) -> None:
        """Take a source out of every store and mark it failed with ``reason``."""
        self._set_status(source_id, SourceStatus.FAILED, reason)
        self._remove_from_stores(source_id)
        delete_chunk_rows(self.engine, source_id)

    # -- removing --------------------------------------------------------------------------
    def remove(self, source_id: str) -> None:
        """Remove a source and its chunks from every store and the database.

        Its stored copy goes too, unless another source of the index has the same one.
        """
        if not self._set_status(source_id, SourceStatus.REMOVING, None):
            return  # no such source (already removed)
        self._remove_from_stores(source_id)
        with Session(self.engine) as session:
            record = session.get(Source, source_id)
            stored = record.stored_path if record is not None else None
            delete_chunk_rows(session, source_id)
            if record is not None:
                session.delete(record)
            session.commit()
            shared = (
                stored is not None
                and session.exec(
                    select(Source.id).where(
                        Source.index_id == self.index_id, Source.stored_path == stored
                    )
                ).first()
            )
        if stored is not None and not shared:
            Path(stored).unlink(missing_ok=True)
