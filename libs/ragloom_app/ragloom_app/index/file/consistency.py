"""``ragloom index check``: do a file index's database, Chroma and full-text store agree?

:meth:`FileIndexChecker.check` compares the chunk ids the database records for indexed
sources with the ids each store holds, and with ``repair`` fixes what differs. The rules
are in docs/cli.md.

Work of a live process (a source whose :class:`WorkLock` is held) is never touched: a
UI indexing in one process survives ``ragloom index check --repair`` run in another.
Interrupted files are repaired as the recovery finishes them (:func:`.recovery.take_over`):
indexed again only below ``MAX_INDEXING_ATTEMPTS``, else failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sqlmodel import Session, col, delete, func, select

from ragloom.schema import Chunk
from ragloom.stores import FullTextStore, VectorStore
from ragloom_app.db.models import ChunkRecord, Source, SourceStatus
from ragloom_app.index.base import CheckProblem, CheckReport
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.recovery import (
    MAX_INDEXING_ATTEMPTS,
    UNFINISHED,
    stale_partials,
    stored_elsewhere,
    take_over,
)

__all__ = ["STORED_COPY_MISSING_REASON", "FileIndexChecker"]

logger = logging.getLogger(__name__)

#: Why ``check --repair`` fails an indexed source whose stored copy is gone.
STORED_COPY_MISSING_REASON = "its stored copy is missing from the data folder; add the file again"
_INCOMPLETE_REASON = "some of its chunks were lost and its stored copy is gone; add the file again"

_BATCH = 256  # chunks re-embedded per call when repairing; bounds the memory used


@dataclass
class _Found:
    problem: CheckProblem
    fix: Callable[[], object]  # what it returns is not used


def _unlink_all(paths: Iterable[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _source_of(chunk_id: str) -> str:
    # TokenSplitter names chunks "<source id>-<n>": how a store's chunk of a source that
    # has no chunk rows yet (one being indexed) is told from a stray one.
    return chunk_id.rpartition("-")[0]


def _names(sources: Iterable[Source], limit: int = 5) -> str:
    names = [s.name for s in sources]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class FileIndexChecker:
    """The consistency check of one file index, done through its indexing pipeline."""

    def __init__(self, pipeline: FileIndexingPipeline, index_name: str) -> None:
        self.pipeline = pipeline
        self.index_name = index_name
        self.engine = pipeline.engine
        self.index_id = pipeline.index_id

    @property
    def stores(self) -> dict[str, VectorStore | FullTextStore]:
        """The stores compared with the database, by the name reports use."""
        return {
            "vector": self.pipeline.ingestor.vector_store,
            "fulltext": self.pipeline.ingestor.fulltext_store,
        }

    def _sources(self, statuses: Iterable[SourceStatus] | None = None) -> list[Source]:
        query = select(Source).where(Source.index_id == self.index_id)
        if statuses is not None:
            query = query.where(col(Source.status).in_(list(statuses)))
        with Session(self.engine) as session:
            return list(session.exec(query.order_by(col(Source.created_at))))

    def _busy(self, source_id: str) -> bool:
        return self.pipeline.work_locks.is_busy(source_id)

    # -- check -----------------------------------------------------------------------------
    def check(self, repair: bool = False) -> CheckReport:
        """Compare the database with every store; with ``repair``, fix and verify again.

        The report lists what was found before any repair. Sources are repaired first
        (indexing one again may settle its store problems too), then the stores are
        compared again and fixed, then everything is checked once more: what is still
        wrong is added as not repaired.
        """
        report = CheckReport(self.index_name)
        sources = self._source_problems(report)
        stores = self._store_problems(confirm=not repair)
        report.problems = [item.problem for item in sources + stores]
        if not repair or not report.problems:
            report.counts = self._counts()
            return report
        for item in sources:
            self._fix(item)
        failed: set[tuple[str, str | None]] = set()
        for item in self._store_problems(confirm=False):
            self._fix(item)
            key = (item.problem.kind, item.problem.store)
            if not item.problem.repaired:
                failed.add(key)
            if key not in {(f.problem.kind, f.problem.store) for f in stores}:
                report.problems.append(item.problem)  # appeared while sources were fixed
        for item in stores:
            item.problem.repaired = (item.problem.kind, item.problem.store) not in failed
        self.pipeline.ingestor.fulltext_store.ensure_index()
        after = self.check(repair=False)
        for problem in after.problems:
            problem.message = f"still after repair: {problem.message}"
            report.problems.append(problem)
        report.notes, report.counts = after.notes, after.counts
        return report

    def _fix(self, item: _Found) -> None:
        try:
            item.fix()
        except Exception as exc:
            logger.exception("repair of %s failed", item.problem.kind)
            item.problem.message += f" (repair failed: {type(exc).__name__}: {exc})"
        else:
            item.problem.repaired = True

    def _counts(self) -> dict[str, int]:
        sources = self._sources()
        with Session(self.engine) as session:
            chunks = session.exec(
                select(func.count(col(ChunkRecord.id))).where(ChunkRecord.index_id == self.index_id)
            ).one()
        counts = {
            "sources": len(sources),
            "indexed": sum(1 for s in sources if s.status == SourceStatus.INDEXED),
            "chunks": int(chunks),
        }
        counts.update({name: store.count() for name, store in self.stores.items()})
        return counts

    def _source_problems(self, report: CheckReport) -> list[_Found]:
        sources = self._sources()
        unfinished = [s for s in sources if s.status in UNFINISHED]
        found = self._unfinished_problems(report, unfinished)
        indexed = [s for s in sources if s.status == SourceStatus.INDEXED]
        # A copy stored through another data folder (another app process's) is not this
        # one's to judge: missing here, it may be whole there, and a repair would take a
        # searchable file out of every store.
        elsewhere = [s for s in indexed if stored_elsewhere(s, self.pipeline)]
        if elsewhere:
            report.notes.append(
                f"{len(elsewhere)} files were stored through another data folder, whose "
                f"copies are not checked here: {_names(elsewhere)}"
            )
        not_here = {s.id for s in elsewhere}
        lost = [
            s
            for s in indexed
            if s.id not in not_here and (not s.stored_path or not Path(s.stored_path).is_file())
        ]
        if lost:
            found.append(
                _Found(
                    CheckProblem(
                        "stored_file_missing",
                        f"{len(lost)} indexed files have no stored copy: {_names(lost)}",
                        ids=[s.id for s in lost],
                    ),
                    partial(self._unindex_all, [s.id for s in lost]),
                )
            )
        rows = self._chunk_rows_by_source()
        incomplete = [s for s in indexed if s not in lost and rows.get(s.id, 0) != s.chunk_count]
        if incomplete:
            found.append(
                _Found(
                    CheckProblem(
                        "incomplete_source",
                        f"{len(incomplete)} indexed files do not have the chunk rows they "
                        f"should: {_names(incomplete)}",
                        ids=[s.id for s in incomplete],
                    ),
                    partial(self._reindex_all, [s.id for s in incomplete]),
                )
            )
        # Chunk rows are written with the flip to indexed, so a failed source has none;
        # an unfinished one's rows are the recovery's to delete.
        keep = {s.id for s in indexed} | {s.id for s in unfinished}
        stray = sorted(sid for sid in rows if sid not in keep)
        if stray:
            found.append(
                _Found(
                    CheckProblem(
                        "stray_chunk_rows",
                        f"chunk rows of {len(stray)} files that are not indexed",
                        ids=stray,
                    ),
                    partial(self._delete_rows, stray),
                )
            )
        unreferenced = self._unreferenced_files(sources)
        if unreferenced:
            found.append(
                _Found(
                    CheckProblem(
                        "unreferenced_files",
                        f"{len(unreferenced)} stored files belong to no file of the index",
                        ids=[p.name for p in unreferenced],
                    ),
                    partial(_unlink_all, unreferenced),
                )
            )
        return found

    def _unfinished_problems(self, report: CheckReport, unfinished: list[Source]) -> list[_Found]:
        """Notes on the files being worked on now or left to another data folder's process,
        and the problem of those a stopped process of this folder left."""
        live = [s for s in unfinished if self._busy(s.id)]
        if live:
            report.notes.append(f"{len(live)} files are being worked on now: {_names(live)}")
        idle = [s for s in unfinished if s not in live]
        # Only a process of the data folder that stored a file has its copy to finish it.
        theirs = [s for s in idle if stored_elsewhere(s, self.pipeline)]
        if theirs and self.pipeline.work_locks.shared is None:
            report.notes.append(
                f"{len(theirs)} files are unfinished in another data folder, whose process "
                f"finishes or recovers them; not judged here: {_names(theirs)}"
            )
        elif theirs:
            report.notes.append(
                f"{len(theirs)} files were left unfinished in another data folder by a "
                f"process that stopped; a process of that folder recovers them (`ragloom "
                f"serve` as it starts, or `ragloom index check --repair`): {_names(theirs)}"
            )
        dead = [s for s in idle if s not in theirs]
        if not dead:
            return []
        message = (
            f"{len(dead)} files were left unfinished by a process that stopped: {_names(dead)}"
        )
        # The repair indexes again at most once: say which files it will fail instead.
        spent = [
            s
            for s in dead
            if s.status != SourceStatus.REMOVING and s.attempts >= MAX_INDEXING_ATTEMPTS
        ]
        if spent:
            message += (
                f"; {_names(spent)} stopped {MAX_INDEXING_ATTEMPTS} times and will be "
                "failed, not indexed again"
            )
        problem = CheckProblem("interrupted", message, ids=[s.id for s in dead])
        return [_Found(problem, partial(self._take_over_all, [s.id for s in dead]))]

    def _chunk_rows_by_source(self) -> dict[str, int]:
        with Session(self.engine) as session:
            query = (
                select(ChunkRecord.source_id, func.count())
                .where(ChunkRecord.index_id == self.index_id)
                .group_by(ChunkRecord.source_id)
            )
            return {sid: int(n) for sid, n in session.exec(query)}

    def _unreferenced_files(self, sources: list[Source]) -> list[Path]:
        files_dir = self.pipeline.files_dir
        if not files_dir.is_dir():
            return []
        kept = {Path(s.stored_path).name for s in sources if s.stored_path}
        stale: list[Path] = []
        for path in sorted(files_dir.iterdir()):
            if path.name not in kept and not path.name.endswith(".partial"):
                stale.append(path)
        return stale + stale_partials(self.pipeline)

    def _take_over_all(self, ids: list[str]) -> None:
        for source_id in ids:
            take_over(self.pipeline, source_id)

    def _unindex_all(self, ids: list[str]) -> None:
        for source_id in ids:
            self._with_lock(
                source_id,
                partial(self.pipeline.unindex, source_id, STORED_COPY_MISSING_REASON),
            )

    def _reindex_all(self, ids: list[str]) -> None:
        for source_id in ids:
            self._with_lock(
                source_id,
                partial(self.pipeline.reingest, source_id, lost_reason=_INCOMPLETE_REASON),
            )

    def _with_lock(self, source_id: str, work: Callable[[], object]) -> None:
        """Run ``work`` holding the source's lock; skip a source a live process holds."""
        lock = self.pipeline.work_locks.lock(source_id)
        if not lock.acquire(blocking=False):
            logger.warning("source %s is being worked on by another process; left alone", source_id)
            return
        try:
            work()
        finally:
            lock.release()

    def _delete_rows(self, source_ids: list[str]) -> None:
        with Session(self.engine) as session:
            session.exec(delete(ChunkRecord).where(col(ChunkRecord.source_id).in_(source_ids)))
            session.commit()

    # -- stores ----------------------------------------------------------------------------
    def _store_diff(self) -> dict[str, tuple[set[str], set[str]]]:
        """Per store: (missing, extra) chunk ids. Stores are read before the database, so
        a file finishing meanwhile can only look missing (re-adding it is harmless), never
        extra."""
        held = {name: store.ids() for name, store in self.stores.items()}
        with Session(self.engine) as session:
            expected = set(
                session.exec(
                    select(ChunkRecord.id)
                    .join(Source, col(Source.id) == col(ChunkRecord.source_id))
                    .where(
                        ChunkRecord.index_id == self.index_id,
                        Source.status == SourceStatus.INDEXED,
                    )
                )
            )
            in_progress = set(
                session.exec(
                    select(Source.id).where(
                        Source.index_id == self.index_id, col(Source.status).in_(UNFINISHED)
                    )
                )
            )
        diff: dict[str, tuple[set[str], set[str]]] = {}
        for name, ids in held.items():
            extra = {i for i in ids - expected if _source_of(i) not in in_progress}
            diff[name] = (expected - ids, extra)
        return diff

    def _store_problems(self, *, confirm: bool) -> list[_Found]:
        diff = self._store_diff()
        if confirm and any(m or e for m, e in diff.values()):
            # A second look drops what a live upload or removal showed for a moment.
            again = self._store_diff()
            diff = {n: (m & again[n][0], e & again[n][1]) for n, (m, e) in diff.items()}
        found: list[_Found] = []
        for name, (missing_set, extra_set) in diff.items():
            store = self.stores[name]
            missing, extra = sorted(missing_set), sorted(extra_set)
            label = "Chroma" if name == "vector" else "the full-text store"
            if missing:
                found.append(
                    _Found(
                        CheckProblem(
                            "missing_chunks",
                            f"{len(missing)} chunks of indexed files are missing from {label}",
                            store=name,
                            ids=missing,
                        ),
                        partial(self._add_back, name, missing),
                    )
                )
            if extra:
                found.append(
                    _Found(
                        CheckProblem(
                            "extra_chunks",
                            f"{len(extra)} chunks in {label} belong to no indexed file",
                            store=name,
                            ids=extra,
                        ),
                        partial(store.delete, extra),
                    )
                )
        return found

    def _add_back(self, store_name: str, ids: list[str]) -> None:
        """Write chunks the database records back into a store (re-embedding for Chroma)."""
        ingestor = self.pipeline.ingestor
        for start in range(0, len(ids), _BATCH):
            chunks = self._chunks(ids[start : start + _BATCH])
            if store_name == "vector":
                vectors = ingestor.embeddings.embed_documents([c.text for c in chunks])
                ingestor.write_vectors(chunks, vectors)
            else:
                ingestor.write_fulltext(chunks)

    def _chunks(self, ids: list[str]) -> list[Chunk]:
        with Session(self.engine) as session:
            rows = session.exec(
                select(ChunkRecord, Source.name)
                .join(Source, col(Source.id) == col(ChunkRecord.source_id))
                .where(col(ChunkRecord.id).in_(ids))
            )
            return [
                Chunk(
                    id=record.id,
                    text=record.text,
                    source_id=record.source_id,
                    source_name=name,
                    page=record.page,
                    start=record.start,
                    end=record.end,
                )
                for record, name in rows
            ]
