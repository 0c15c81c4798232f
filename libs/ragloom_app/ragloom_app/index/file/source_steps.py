"""The steps of one source through the stores, and its removal and repair.

:class:`SourceSteps` is the half of :class:`~.pipeline.FileIndexingPipeline` that works on
one source at a time, whatever upload it came in: record its row, keep its copy, chunk
it, write its chunks with their vectors and flip it to ``indexed``, or fail it and undo
what it wrote; and, for :mod:`.consistency` and :mod:`.recovery`, index it again, take it
out of the stores, remove it. The invariants these steps keep are in :mod:`.pipeline`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ragloom.chunking import PER_FILE
from ragloom.indexing import FileIngestor
from ragloom.loaders import FileBudgetError, LoaderError
from ragloom.sandbox import SandboxStopped
from ragloom.schema import Chunk
from ragloom_app.db.models import Source, SourceStatus
from ragloom_app.errors import user_error
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.budget import UploadBudget
from ragloom_app.index.file.attempts import GAVE_UP_REASON, attempt_underway, start_attempt
from ragloom_app.index.file.disk import disk_full_reason, reference_of
from ragloom_app.index.file.groups import PreparedFile
from ragloom_app.index.file.source_rows import delete_chunk_rows, record_indexed, set_status
from ragloom_app.index.file.worklock import SharedLocks, WorkLocks

__all__ = [
    "INTERRUPTED_REASON",
    "SourceSteps",
    "index_locks_dir",
    "index_work_locks",
    "sha256_of",
]

logger = logging.getLogger(__name__)

#: Why a source is failed when a crash cut its indexing short and its copy is gone.
INTERRUPTED_REASON = "interrupted while indexing; add the file again"


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def index_locks_dir(index_data_dir: Path) -> Path:
    """The folder of a file index's lock files of work in progress (see :mod:`.worklock`),
    in its data folder ``index_data_dir``."""
    return index_data_dir / "locks"


def index_work_locks(locks_dir: Path, index_id: int, shared: SharedLocks | None) -> WorkLocks:
    """The work locks of the file index ``index_id``: files in ``locks_dir`` and, with
    ``shared``, locks that the processes of other data folders see too."""
    return WorkLocks(locks_dir, shared, scope=f"file-index/{index_id}")


class SourceSteps:
    """Steps on one source of the file index ``index_id`` (see the module docstring).

    The pipeline that inherits them sets the attributes below.
    """

    index_id: int
    engine: Engine
    ingestor: FileIngestor
    files_dir: Path
    owner: str
    data_dir: Path
    shared_locks: SharedLocks | None

    @property
    def locks_dir(self) -> Path:
        """Lock files of work in progress (see :func:`index_locks_dir`)."""
        return index_locks_dir(self.data_dir)

    @property
    def work_locks(self) -> WorkLocks:
        """Locks of work in progress on this index (see :func:`index_work_locks`)."""
        return index_work_locks(self.locks_dir, self.index_id, self.shared_locks)

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

    def _begin(
        self,
        path: Path,
        name: str,
        digest: str,
        budget: UploadBudget | None = None,
        *,
        recorded: Callable[[], None] | None = None,
        attempts: int = 1,
    ) -> FileOutcome | PreparedFile:
        """Record a new source, store its copy and chunk it; its hold goes with it.
        ``recorded`` is called once its row is written (and held). ``attempts`` counts
        this one and those carried over from an earlier source of the file."""
        source_id = uuid.uuid4().hex
        stored = self.files_dir / f"{digest}{Path(name).suffix.lower()}"
        with contextlib.ExitStack() as held:
            # Held until the final status is committed: while it is held, no other process
            # takes this source for one a crash left behind.
            held.enter_context(self.work_locks.lock(source_id))
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
                        attempts=attempts,  # committed before any reading: see .attempts
                    )
                )
                session.commit()
            if recorded is not None:
                recorded()
            held.enter_context(attempt_underway(self.engine, source_id))
            try:
                self._keep_copy(path, stored, source_id)
            except OSError as exc:
                reason = f"could not store the file: {exc.strerror or exc}"
                self._fail(source_id, reason)
                return FileOutcome(name, "failed", reason=reason, source_id=source_id)
            chunks = self._chunked(source_id, stored, name, budget, digest)
            if isinstance(chunks, FileOutcome):
                return chunks
            # One that stopped the process before is embedded alone (see PreparedFile).
            alone = attempts > 1
            return PreparedFile(source_id, name, digest, chunks, held.pop_all(), alone=alone)

    def _given_up(self, same: list[Source], name: str) -> FileOutcome:
        """The outcome of a file that stopped the process MAX_INDEXING_ATTEMPTS times in
        this job's earlier runs and the recoveries between them; a source of it left
        unfinished is failed now, as the recovery would."""
        for source in same:
            if source.status not in (SourceStatus.QUEUED, SourceStatus.INDEXING):
                continue
            lock = self.work_locks.lock(source.id)
            if lock.acquire(blocking=False):  # else a recovery finishes it just now
                try:
                    self.unindex(source.id, GAVE_UP_REASON)
                finally:
                    lock.release()
        given_up = next((s.id for s in same if s.status != SourceStatus.INDEXED), None)
        return FileOutcome(name, "failed", reason=GAVE_UP_REASON, source_id=given_up)

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

    def _run_ingest(self, source_id: str, stored: Path, name: str) -> FileOutcome:
        """Chunk, embed and store a source whose row says ``indexing``, then flip it."""
        chunks = self._chunked(source_id, stored, name, None)
        if isinstance(chunks, FileOutcome):
            return chunks
        return self._finish(source_id, name, chunks, self._embedded(chunks))

    def _chunked(
        self,
        source_id: str,
        stored: Path,
        name: str,
        budget: UploadBudget | None,
        digest: str | None = None,
    ) -> list[Chunk] | FileOutcome:
        """The chunks of a source's stored copy, or its failure (already recorded). A
        failure on a budget is noted in the upload's ``budget`` under ``digest``."""
        try:
            return self._chunk_within(stored, source_id, name, budget)
        except SandboxStopped:
            raise  # the app is stopping: nothing is known of the file (see .attempts)
        except LoaderError as exc:
            if isinstance(exc, FileBudgetError) and budget is not None and digest is not None:
                budget.note_over_budget(digest, name, exc.reason)
            self._fail(source_id, exc.reason)
            return FileOutcome(name, "failed", reason=exc.reason, source_id=source_id)
        except Exception as exc:
            return self._failed(source_id, name, exc)

    def _embedded(self, chunks: Sequence[Chunk]) -> np.ndarray | Exception:
        """The chunks' vectors, or why there are none (for :meth:`_finish` to record)."""
        try:
            return self.ingestor.embed(chunks)
        except Exception as exc:
            return exc

    def _finish(
        self,
        source_id: str,
        name: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | Exception,
        *,
        vectors_stored: bool = False,
    ) -> FileOutcome:
        """Write a chunked source's chunks with their vectors, then flip it to indexed.
        With ``vectors_stored`` the vectors are in the vector store already (written with
        the rest of an upload's group): only the full text is written here."""
        try:
            if isinstance(vectors, Exception):
                raise vectors
            if vectors_stored:
                self.ingestor.write_fulltext(chunks)
            else:
                self.ingestor.write(chunks, vectors)
            flipped = self._flip(source_id, chunks)
        except Exception as exc:
            return self._failed(source_id, name, exc)
        if not flipped:
            # Removed (or taken over) while we worked: what we wrote must not stay.
            self._remove_from_stores(source_id)
            reason = "removed while it was being indexed"
            return FileOutcome(name, "failed", reason=reason, source_id=source_id)
        return FileOutcome(name, "indexed", chunks=len(chunks), source_id=source_id)

    def _failed(self, source_id: str, name: str, exc: Exception) -> FileOutcome:
        """Fail a source for an exception whose words were not written for the user."""
        # A store or database failing: its words and a log reference, the exception itself
        # in the log. A store that fails on a full disk rarely says so (Chroma: "Error in
        # compaction"): the disk does.
        reason = user_error(exc, f"Indexing {name!r}", log=logger).message
        full = disk_full_reason(self.data_dir)
        if full:
            reason = f"{reason.split(':', 1)[0]}: {full}{reference_of(reason)}"
        if not self._fail(source_id, reason):
            with Session(self.engine) as session:
                source = session.get(Source, source_id)
            if source is not None and source.status == SourceStatus.INDEXED:
                # Its flip was committed although the error came after (a reply lost).
                chunks = source.chunk_count
                return FileOutcome(name, "indexed", chunks=chunks, source_id=source_id)
        return FileOutcome(name, "failed", reason=reason, source_id=source_id)

    def _flip(self, source_id: str, chunks: Sequence[Chunk]) -> bool:
        """Record the chunks and mark the source indexed, in one transaction; then remove
        the sources of the same content it replaces (see :func:`.record_indexed`)."""
        flip = record_indexed(self.engine, self.index_id, source_id, chunks)
        for old in flip.replaced:
            lock = self.work_locks.lock(old)
            if not lock.acquire(blocking=False):
                continue  # another process removes it already (a recovery, a repair)
            try:
                self.remove(old)
            except Exception:
                # The new source is indexed whatever happens here: the old one says
                # ``removing``, and the recovery finishes a removal cut short.
                logger.warning(
                    "could not remove %s, replaced by %s; the recovery will",
                    old,
                    source_id,
                    exc_info=True,
                )
            finally:
                lock.release()
        return flip.done

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

    def _fail(self, source_id: str, reason: str) -> bool:
        """Record why a source failed, then undo what it wrote to the stores; ``False``
        (nothing done) if the source was no longer ``indexing``.

        A flip whose commit went through while its reply was lost (the database going
        away) left the source ``indexed``, every store holding it: it must not lose its
        vectors. A database that cannot be reached raises here, before anything is undone:
        the row still says ``indexing``, and the recovery removes what the source wrote
        before indexing it again. What a store still holds of a failed source when undoing
        fails (a store that is down is often why the file failed) is no indexed source's,
        and ``ragloom index check --repair`` deletes it.
        """
        if not self._set_status(
            source_id, SourceStatus.FAILED, reason, only_if=SourceStatus.INDEXING
        ):
            return False
        try:
            self._remove_from_stores(source_id)
        except Exception:
            logger.warning(
                "could not take %s out of the stores; `ragloom index check --repair` will",
                source_id,
                exc_info=True,
            )
        return True

    def _remove_from_stores(self, source_id: str) -> None:
        """Delete the source's chunks from both stores; each is tried though the other fail.

        The full-text store goes first: it is local or the app's own database, so it is
        the one most likely still there when a vector server is away.
        """
        failures: list[Exception] = []
        for store in (self.ingestor.fulltext_store, self.ingestor.vector_store):
            try:
                store.delete_source(source_id)
            except Exception as exc:  # the other store's chunks must still go
                failures.append(exc)
        if failures:
            raise failures[0]

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
