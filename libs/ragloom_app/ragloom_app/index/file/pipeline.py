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
- An index holds one searchable source per content. A file indexed again becomes a new
  source; the flip of the new one marks the others of the same content ``removing`` in
  its transaction, so a reindex that fails, is cancelled or crashes keeps the old version.

A ``.zip`` upload is expanded in a private folder and each member becomes a source of its
own, named ``archive.zip/folder/member.md``.

Each file is read and chunked in the readers sandbox within its own budgets of chunks and
time (:mod:`ragloom.chunking`); each call of :meth:`FileIndexingPipeline.stream` (one
upload) also has a budget of bytes and chunks for all its files (:mod:`.budget`). The
chunks of consecutive small files of an upload are embedded together, in a thread while
the next files are read (:mod:`.groups`), and a group's vectors written in one call; each
file's full text is still stored, and the file flipped and reported, on its own, in
upload order.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np
from sqlalchemy import case
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom.byte_sizes import size_text
from ragloom.indexing import FileIngestor
from ragloom.loaders.archive import ZipLimits
from ragloom_app.db.models import Source, SourceStatus
from ragloom_app.index.base import FileOutcome, IndexingPipeline, IndexingProgress
from ragloom_app.index.budget import MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS, UploadBudget
from ragloom_app.index.file.archives import ARCHIVE_SUFFIXES, index_archive, reported_name
from ragloom_app.index.file.attempts import MAX_INDEXING_ATTEMPTS, carried_attempts
from ragloom_app.index.file.groups import PreparedFile, UploadGroups
from ragloom_app.index.file.names import UnsafeNameError, safe_display_name
from ragloom_app.index.file.source_steps import INTERRUPTED_REASON, SourceSteps, sha256_of
from ragloom_app.index.file.worklock import SharedLocks

__all__ = ["INTERRUPTED_REASON", "FileIndexingPipeline", "sha256_of"]

logger = logging.getLogger(__name__)

_Event = IndexingProgress | FileOutcome
_WAIT_SLICE_SECONDS = 2.0  # how often a file waiting for a busy copy says so


class FileIndexingPipeline(SourceSteps, IndexingPipeline):
    """Indexes files into one file index (see the module docstring).

    ``data_dir`` is the index's own folder (default: the parent of ``files_dir``); the
    pipeline keeps its lock files and temporary folders there, never elsewhere. Each
    upload may spend ``max_upload_bytes`` and ``max_upload_chunks``; archives are
    expanded within ``archive_limits``. ``resumed_since`` says the upload is a job's that
    began before (its worker died), made at that time: a file begun again carries the
    attempts its earlier runs counted against its content
    (:func:`~.attempts.carried_attempts`), and one they reached MAX_INDEXING_ATTEMPTS is
    failed without being read. ``shared_locks`` (PostgreSQL's advisory locks) make its
    work locks seen by the processes of other data folders too (:mod:`.worklock`).
    """

    #: Embed a full group in a thread while the next files are read (:mod:`.groups`).
    embed_ahead: bool = True
    #: How long a file waits for a copy of it that another upload is indexing, to see
    #: whether that copy ends indexed (then the file is skipped) or not (then it is
    #: indexed: a cancel or a failure of the other upload does not lose it). Past it, the
    #: file fails, saying to add it again once that copy is done.
    busy_wait_seconds: float = 120.0

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
        resumed_since: datetime | None = None,
        shared_locks: SharedLocks | None = None,
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
        self.resumed_since = resumed_since
        self.shared_locks = shared_locks

    @property
    def tmp_dir(self) -> Path:
        """Temporary folders (expanded archives), removed after use."""
        return self.data_dir / "tmp"

    # -- adding files ----------------------------------------------------------------------
    def stream(
        self, paths: Sequence[Path], *, reindex: bool = False, names: Sequence[str] | None = None
    ) -> Iterator[_Event]:
        # A group's files are reported after the next files began: the upload's progress
        # is the most it has reached, never less.
        reached = 0.0
        with contextlib.closing(self._events(paths, reindex, names)) as events:
            for event in events:
                if isinstance(event, IndexingProgress):
                    reached = max(reached, event.fraction)
                    event = replace(event, fraction=reached)
                yield event

    def _events(
        self, paths: Sequence[Path], reindex: bool, names: Sequence[str] | None
    ) -> Generator[_Event, None, None]:
        paths = [Path(p) for p in paths]
        shown = list(names) if names is not None else [p.name for p in paths]
        total = len(paths) or 1
        budget = UploadBudget(self.max_upload_bytes, self.max_upload_chunks)
        groups = UploadGroups(
            self.ingestor.embed,
            self._finish_prepared,
            ahead=self.embed_ahead,
            store_vectors=self.ingestor.write_vectors,
        )
        try:
            try:
                for position, (path, raw_name) in enumerate(zip(paths, shown, strict=True)):
                    start, end = position / total, (position + 1) / total
                    yield IndexingProgress(reported_name(raw_name), start, "reading")
                    events = self._index_upload(
                        path, raw_name, reindex, (start, end), budget, groups
                    )
                    for event in events:
                        if isinstance(event, PreparedFile) and event.alone:
                            yield from groups.flush()
                            yield from groups.add(event)
                            yield from groups.flush()
                        elif isinstance(event, PreparedFile):
                            yield from groups.add(event)
                        else:
                            yield event
            except Exception:
                # A file's unforeseen error (its folder unreadable, the database locked)
                # ends the upload, as it did; the files waiting are finished first.
                yield from groups.flush()
                raise
            yield from groups.flush()
        except GeneratorExit:
            groups.discard(self.remove)
            raise
        except BaseException:
            groups.abandon(*sys.exc_info())
            raise
        finally:
            groups.close()
        # Build the full-text index now rather than on the first question after an upload.
        self.ingestor.fulltext_store.ensure_index()

    def _index_upload(
        self,
        path: Path,
        raw_name: str,
        reindex: bool,
        span: tuple[float, float],
        budget: UploadBudget,
        groups: UploadGroups,
    ) -> Iterator[_Event | PreparedFile]:
        """The events of one uploaded file (an archive: of each member), or the file
        prepared to join ``groups``."""
        try:
            name = safe_display_name(raw_name)
        except UnsafeNameError as exc:
            refused = FileOutcome(reported_name(raw_name), "failed", reason=str(exc))
            yield from self._report(groups, refused, span[1])
            return
        problem = self._check_file(path, name)
        if Path(name).suffix.lower() in ARCHIVE_SUFFIXES and not problem:
            over = budget.spend_file(path)  # the zip itself; its expansion spends the rest
            if over:
                yield from self._report(groups, FileOutcome(name, "failed", reason=over), span[1])
                return
            yield from index_archive(
                path,
                name,
                lambda member, shown, part: self._index_file(
                    member, shown, self._check_file(member, shown), reindex, part, budget, groups
                ),
                lambda outcome, fraction: self._report(groups, outcome, fraction),
                tmp_root=self.tmp_dir,
                locks_dir=self.locks_dir,
                span=span,
                limits=self.archive_limits,
                budget=budget,
            )
            return
        yield from self._index_file(
            path, name, problem, reindex, span, budget, groups, spend_bytes=True
        )

    def _index_file(
        self,
        path: Path,
        name: str,
        problem: str | None,
        reindex: bool,
        span: tuple[float, float],
        budget: UploadBudget,
        groups: UploadGroups,
        *,
        spend_bytes: bool = False,
    ) -> Iterator[_Event | PreparedFile]:
        """One file (``problem``: what its checks found) prepared to join ``groups``, or
        the events of its outcome. An archive's member has spent its bytes already."""
        # Hashed only once it passes the checks: a refused file costs a stat, not a read.
        digest = None if problem else sha256_of(path)
        if digest is not None and groups.holds(digest):
            # A copy of a file not yet finished: decided once that one is indexed.
            yield from groups.flush()
        prepared = self._prepare(
            path, name, reindex, budget, digest=digest, spend_bytes=spend_bytes, wait=not reindex
        )
        if isinstance(prepared, _BusyCopy):
            # Finished first, so that this upload holds no file while it waits: two uploads
            # never wait for each other.
            yield from groups.flush()
            busy = prepared.source
            waiting = f"waiting: the same content is being indexed as {busy.name!r}"
            deadline = time.monotonic() + self.busy_wait_seconds
            while True:
                # In slices, each announced: the caller may stop the upload between them.
                yield IndexingProgress(name, span[0], waiting, waiting=True)
                left = max(deadline - time.monotonic(), 0.0)
                free = self.work_locks.wait_until_free(busy.id, min(left, _WAIT_SLICE_SECONDS))
                if free or time.monotonic() >= deadline:
                    break
            if free:
                prepared = self._prepare(
                    path, name, reindex, budget, digest=digest, spend_bytes=spend_bytes
                )
                assert not isinstance(prepared, _BusyCopy)  # returned only when asked to wait
            else:
                # Not "skipped": how that copy ends is unknown, and a skip would lose the
                # file if it does not end indexed.
                prepared = FileOutcome(
                    name,
                    "failed",
                    reason=(
                        f"the same content is still being indexed as {busy.name!r} after "
                        f"{self.busy_wait_seconds:.0f} s: add it again once that ends"
                    ),
                )
        if isinstance(prepared, PreparedFile):
            prepared.span = span
            yield prepared
        else:
            yield from self._report(groups, prepared, span[1])

    @staticmethod
    def _report(groups: UploadGroups, outcome: FileOutcome, fraction: float) -> Iterator[_Event]:
        """An outcome decided now, after those of the files still in ``groups``: outcomes
        stay in upload order."""
        yield from groups.flush()
        yield IndexingProgress(outcome.name, fraction, outcome.status)
        yield _logged(outcome)

    def _finish_prepared(
        self, prepared: PreparedFile, vectors: np.ndarray | Exception, stored: bool
    ) -> FileOutcome:
        return _logged(
            self._finish(
                prepared.source_id, prepared.name, prepared.chunks, vectors, vectors_stored=stored
            )
        )

    def _prepare(
        self,
        path: Path,
        name: str,
        reindex: bool,
        budget: UploadBudget | None = None,
        *,
        spend_bytes: bool = True,
        digest: str | None = None,
        wait: bool = False,
    ) -> FileOutcome | PreparedFile | _BusyCopy:
        """Check, deduplicate, record, store and chunk one file, or its outcome already.

        ``digest`` is given for a file that passed :meth:`_check_file` already. A file
        skipped as already indexed spends nothing of the upload's budget. A copy of the
        file that another upload is indexing now makes it skipped as "being indexed right
        now"; with ``wait``, that copy is returned instead, for the caller to wait for.
        """
        if digest is None:
            problem = self._check_file(path, name)
            if problem:
                return FileOutcome(name, "failed", reason=problem)
            digest = sha256_of(path)
        # Held from the look for a copy until this file's row is written (released then,
        # not at the end of the copy and the chunking): two uploads of one new content at
        # the same instant would both find none and both index it.
        with self.work_locks.lock(f"content-{digest}") as looking:
            same = self._same_content(digest)
            existing = same[0] if same else None
            if existing is not None:
                if existing.status == SourceStatus.INDEXED and not reindex:
                    return FileOutcome(
                        name,
                        "skipped",
                        chunks=existing.chunk_count,
                        reason=f"already indexed as {existing.name!r} (same content)",
                        source_id=existing.id,
                    )
                busy = next((s for s in same if self.work_locks.is_busy(s.id)), None)
                if busy is not None and wait:
                    return _BusyCopy(busy)
                if busy is not None:
                    return FileOutcome(
                        name,
                        "skipped",
                        reason=f"being indexed right now as {busy.name!r} (same content)",
                        source_id=busy.id,
                    )
            carried = 0
            if self.resumed_since is not None:
                carried = carried_attempts(same, since=self.resumed_since, owner=self.owner)
            if carried >= MAX_INDEXING_ATTEMPTS:
                return self._given_up(same, name)
            if budget is not None:
                # A copy of a content that took a whole budget of a file: not read again.
                over = budget.failed_before(digest, name)
                over = over or (budget.spend_file(path) if spend_bytes else budget.used_up())
                if over:
                    return FileOutcome(name, "failed", reason=over)
            if existing is not None and existing.status != SourceStatus.INDEXED:
                self.remove(existing.id)  # nothing of it to keep (an indexed one is replaced
                # only once its new version is flipped: a reindex that fails keeps the old)
            return self._begin(
                path, name, digest, budget, recorded=looking.release, attempts=carried + 1
            )

    def type_refusal(self, name: str) -> str | None:
        """Why this index does not take a file called ``name`` (its type), or ``None``."""
        suffix = Path(name).suffix.lower()
        if suffix in self.extensions:
            return None
        supported = ", ".join(sorted(self.extensions))
        return f"unsupported file type '{suffix or '(none)'}'; supported: {supported}"

    def _check_file(self, path: Path, name: str) -> str | None:
        refusal = self.type_refusal(name)
        if refusal:
            return refusal
        if not path.is_file():
            return "file not found"
        size = path.stat().st_size
        if size > self.max_file_bytes:
            return (
                f"file too large: {size_text(size)}, the limit is {size_text(self.max_file_bytes)}"
            )
        return None

    def _same_content(self, digest: str) -> list[Source]:
        """The index's sources of this content, indexed ones first (a failed reindex
        leaves its failed attempt beside the version it meant to replace)."""
        with Session(self.engine) as session:
            query = (
                select(Source)
                .where(Source.index_id == self.index_id, Source.sha256 == digest)
                .order_by(case((col(Source.status) == SourceStatus.INDEXED, 0), else_=1))
            )
            return list(session.exec(query))


@dataclass(frozen=True)
class _BusyCopy:
    """A source of the same content as a file, that another upload is indexing now."""

    source: Source


def _logged(outcome: FileOutcome) -> FileOutcome:
    logger.info("%s: %s %s", outcome.name, outcome.status, outcome.reason or "")
    return outcome
