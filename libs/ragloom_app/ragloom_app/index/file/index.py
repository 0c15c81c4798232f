"""The file index: files chunked into Chroma (vectors) and BM25 (terms), fused at query."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, delete, select

from ragloom.indexing import FileIngestor
from ragloom.llms.base import ChatLLM
from ragloom.loaders import FileReader, default_readers
from ragloom.retrieval import (
    DefinitionPrior,
    FullTextRetriever,
    HybridRetriever,
    LLMReranker,
    MMRReranker,
    Reranker,
    RerankingRetriever,
    Retriever,
    VectorRetriever,
)
from ragloom.retrieval.restricted import ExcludingRetriever, RestrictedRetriever
from ragloom.splitters import TokenSplitter
from ragloom_app.db.models import ChunkRecord, Source, SourceStatus
from ragloom_app.index.base import BaseIndex, CheckProblem, CheckReport, FileOutcome
from ragloom_app.index.file import specs
from ragloom_app.index.file.consistency import FileIndexChecker
from ragloom_app.index.file.import_marks import import_state
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.recovery import (
    HALF_IMPORTED,
    clean_leftovers,
    recover_index,
    shown_state,
)
from ragloom_app.index.file.source_steps import index_locks_dir, index_work_locks
from ragloom_app.index.file.specs import RETRIEVAL_MODES, VISIBILITIES
from ragloom_app.index.file.worklock import WorkLocks
from ragloom_app.index.settings import REQUEST_KEYS
from ragloom_app.reasoning.base import SettingSpec
from ragloom_app.settings import chroma_address

if TYPE_CHECKING:  # imported when an index makes its stores: chromadb alone takes ~1 s
    from ragloom.stores import BM25Store, ChromaVectorStore, PostgresFullTextStore

__all__ = ["RETRIEVAL_MODES", "VISIBILITIES", "FileIndex"]

logger = logging.getLogger(__name__)

STORED_COPY_LOST_REASON = "its stored copy is gone: upload the file again"


class FileIndex(BaseIndex):
    """Documents (.txt, .md, .pdf) searched by vectors and full text, fused by rank."""

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        return cls.admin_settings_for(default_readers())

    @classmethod
    def admin_settings_for(cls, readers: Mapping[str, FileReader]) -> dict[str, dict[str, Any]]:
        """The settings, with every file type of ``readers`` (plugins' too) offered."""
        return specs.admin_settings(readers)

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        """How a request searches this index: the mode, the definition prior, MMR, LLM reranking."""
        return specs.user_settings()

    @classmethod
    def normalize_config(
        cls, config: Mapping[str, Any], readers: Mapping[str, FileReader] | None = None
    ) -> dict[str, Any]:
        """``config`` checked and typed; raises ``ValueError`` (``specs.normalized_config``)."""
        return specs.normalized_config(config, readers)

    def setting(self, key: str) -> Any:
        """A setting of this index: its config, else the type's default.

        An index created without a list of file types takes every type the app reads,
        including those of plugins installed later.
        """
        if key in self.config:
            return self.config[key]
        return self.admin_settings_for(self.resources.readers)[key]["value"]

    @property
    def collection_name(self) -> str:
        """The Chroma (and PostgreSQL full-text) collection of this index."""
        return self.store_name

    @cached_property
    def vector_store(self) -> ChromaVectorStore:
        """Chunk vectors: on the Chroma server of ``CHROMA_SERVER``, else in the app's
        embedded Chroma folder. Their texts are the full-text store's (Chroma keeps none)."""
        from ragloom.stores.chroma import ChromaVectorStore, chroma_http_client

        server = self.resources.chroma_server
        texts = self.fulltext_store
        if server is None:
            folder = self.resources.shared_dir / "chroma"
            return ChromaVectorStore(self.collection_name, path=folder, texts_from=texts)
        host, port, tls = chroma_address(server)
        client = chroma_http_client(host, port, tls)
        return ChromaVectorStore(self.collection_name, client=client, texts_from=texts)

    @cached_property
    def fulltext_store(self) -> BM25Store | PostgresFullTextStore:
        """Chunk terms: in the app's PostgreSQL database when the app puts them there
        (``FULLTEXT_STORE``), else in a BM25 file in this index's folder."""
        from ragloom.stores import BM25Store, PostgresFullTextStore

        connect = self.resources.fulltext_connect
        if connect is not None:
            return PostgresFullTextStore(connect, self.collection_name)
        return BM25Store(self.resources.data_dir / "bm25")

    def on_start(self) -> None:
        """Delete partial copies and unpacked archives of dead processes, nothing more.

        Interrupted files are left to :meth:`recover`: indexing them again at start would
        let a file that kills the process keep every command from running.
        """
        clean_leftovers(self)

    def recover(self) -> list[FileOutcome]:
        """Index interrupted files again, at most once each (``recovery.recover_index``)."""
        return recover_index(self.get_indexing_pipeline({}))

    def check(self, repair: bool = False) -> CheckReport:
        """Compare the database, Chroma and the full-text store; ``repair`` fixes them.

        An index an import killed outright left half made is reported as such
        (``interrupted_import``) and not repaired here: it is deleted, which the index
        manager does (``ragloom index check --repair``).
        """
        state = self.import_state()
        if state == "interrupted":
            return CheckReport(
                self.name, problems=[CheckProblem("interrupted_import", HALF_IMPORTED)]
            )
        report = FileIndexChecker(self.get_indexing_pipeline({}), self.name).check(repair=repair)
        if state == "under way":
            report.notes.append("an import is filling it right now")
        return report

    def import_state(self) -> str | None:
        """``"under way"`` while an import fills it, ``"interrupted"`` once one died
        doing it, else ``None``; the same in every data folder (:mod:`.import_marks`)."""
        return import_state(self, self.resources.engine, self.id)

    def busy_with(self) -> str | None:
        """An import filling the index (deleted under it, the import dies halfway)."""
        if self.import_state() == "under way":
            return (
                "an import is still filling it: stop it (Ctrl-C deletes what it made) or let it end"
            )
        return None

    def on_delete(self) -> None:
        """Drop both stores, the database rows and the index's folder, each even when an
        earlier one fails (a later index may get this one's id, and so its collection);
        then raise the first failure, if any."""
        failures: list[Exception] = []
        for step in (self.vector_store.drop, self.fulltext_store.drop, self._delete_rows):
            try:
                step()
            except Exception as exc:
                logger.warning("deleting index %r: %s failed", self.name, step.__name__)
                failures.append(exc)
        shutil.rmtree(self.resources.data_dir, ignore_errors=True)
        if failures:
            raise failures[0]

    def _delete_rows(self) -> None:
        with Session(self.resources.engine) as session:
            session.exec(delete(ChunkRecord).where(col(ChunkRecord.index_id) == self.id))
            session.exec(delete(Source).where(col(Source.index_id) == self.id))
            session.commit()

    def _ingestor(self) -> FileIngestor:
        embeddings = self.resources.embeddings()
        splitter = TokenSplitter(
            chunk_size=int(self.setting("chunk_size")),
            chunk_overlap=int(self.setting("chunk_overlap")),
            tokenizer=embeddings.token_counter(),
        )
        return FileIngestor(
            splitter=splitter,
            embeddings=embeddings,
            vector_store=self.vector_store,
            fulltext_store=self.fulltext_store,
            readers=self.resources.readers,
            max_chunks=self.resources.max_file_chunks,
            max_seconds=self.resources.max_file_seconds,
            min_seconds=self.resources.min_file_seconds,
        )

    @property
    def files_dir(self) -> Path:
        """Stored copies of the indexed files, named by content hash."""
        return self.resources.data_dir / "files"

    @property
    def locks_dir(self) -> Path:
        """Lock files of work in progress (the pipeline's)."""
        return index_locks_dir(self.resources.data_dir)

    @property
    def work_locks(self) -> WorkLocks:
        """Locks of work in progress, as the pipeline takes them."""
        return index_work_locks(self.locks_dir, self.id, self.resources.shared_locks)

    @property
    def tmp_dir(self) -> Path:
        """Temporary folders (expanded archives), removed after use."""
        return self.resources.data_dir / "tmp"

    def get_indexing_pipeline(self, settings: Mapping[str, Any]) -> FileIndexingPipeline:
        """The pipeline adding files for ``settings["owner"]`` (default ``local``);
        ``settings["resumed_since"]``: for a job that began before, when it was made (see
        the pipeline)."""
        return FileIndexingPipeline(
            index_id=self.id,
            engine=self.resources.engine,
            ingestor=self._ingestor(),
            files_dir=self.files_dir,
            data_dir=self.resources.data_dir,
            extensions=self.setting("extensions"),
            max_file_bytes=self.resources.max_file_bytes,
            owner=str(settings.get("owner", "local")),
            max_upload_bytes=self.resources.max_upload_bytes,
            max_upload_chunks=self.resources.max_upload_chunks,
            archive_limits=self.resources.archive_limits,
            resumed_since=settings.get("resumed_since"),
            shared_locks=self.resources.shared_locks,
        )

    def get_retriever_pipelines(
        self, settings: Mapping[str, Any], selected: Collection[str] | None = None
    ) -> list[Retriever]:
        """One retriever over this index, as its settings for the request say.

        Settings (all optional): this type's :meth:`get_user_settings` (``retrieval_mode``,
        one of :data:`RETRIEVAL_MODES`, default hybrid; ``definition_prior``, default off, for
        hybrid; ``mmr`` and ``mmr_lambda``; ``rerank``), checked by :meth:`resolve_settings`;
        and the request's ``top_k`` (default 5) and ``llm`` (a :class:`ChatLLM` for
        ``rerank``, put there by the chat page, not the user). ``selected`` limits the
        search to those source ids, unless it holds every indexed source of this index:
        then no filter is passed, as Chroma's ``$in`` filter is slow. Sources not fully
        indexed are never returned (:meth:`unsearchable_source_ids`).
        """
        values = self.resolve_settings({k: v for k, v in settings.items() if k not in REQUEST_KEYS})
        top_k = int(settings.get("top_k") or 5)
        mode = values["retrieval_mode"]
        vector = VectorRetriever(
            store=self.vector_store, embeddings=self.resources.embeddings(), top_k=top_k
        )
        fulltext = FullTextRetriever(store=self.fulltext_store, top_k=top_k)
        retriever: Retriever
        if mode == "vector":
            retriever = vector
        elif mode == "fulltext":
            retriever = fulltext
        else:
            prior = DefinitionPrior() if values["definition_prior"] else None
            retriever = HybridRetriever(retrievers=[vector, fulltext], top_k=top_k, prior=prior)
        hidden = self.unsearchable_source_ids()
        if hidden:
            # Below any reranker: an LLM judging candidates must never read those chunks.
            retriever = ExcludingRetriever(
                inner=retriever, excluded_ids=sorted(hidden), top_k=top_k
            )
        rerankers = self._rerankers(values, settings.get("llm"))
        if rerankers:
            retriever = RerankingRetriever(inner=retriever, rerankers=rerankers, top_k=top_k)
        sources = self.selection_filter(selected)
        if sources is not None:
            retriever = RestrictedRetriever(inner=retriever, source_ids=sources, top_k=top_k)
        return [retriever]

    def find_terms(
        self, terms: Sequence[str], selected: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """From the full-text store's vocabulary and posting lists (``BM25Store.find_terms``),
        within the selected sources as :meth:`selection_filter` narrows them."""
        sources = self.selection_filter(selected)
        hidden = self.unsearchable_source_ids()
        if hidden:
            within = self.source_ids() if sources is None else set(sources)
            sources = sorted(within - hidden)
        return self.fulltext_store.find_terms(list(terms), sources)

    def _rerankers(self, values: Mapping[str, Any], llm: Any) -> list[Reranker]:
        """MMR first (it orders every candidate), then the LLM judge (it stops early)."""
        rerankers: list[Reranker] = []
        if values["mmr"]:
            lambda_mult = float(values["mmr_lambda"])
            rerankers.append(
                MMRReranker(
                    vector_store=self.vector_store,
                    embeddings=self.resources.embeddings(),
                    lambda_mult=lambda_mult,
                )
            )
        if values["rerank"]:
            if not isinstance(llm, ChatLLM):
                raise ValueError("rerank needs the LLM to judge with in settings['llm']")
            rerankers.append(LLMReranker(llm=llm))
        return rerankers

    def source_ids(self, *statuses: SourceStatus) -> set[str]:
        """The ids of this index's sources in any of ``statuses`` (all of them if none)."""
        query = select(Source.id).where(Source.index_id == self.id)
        if statuses:
            query = query.where(col(Source.status).in_(statuses))
        with Session(self.resources.engine) as session:
            return set(session.exec(query))

    def indexed_source_ids(self) -> set[str]:
        """The ids of this index's sources that are fully indexed (searchable)."""
        return self.source_ids(SourceStatus.INDEXED)

    def unsearchable_source_ids(self) -> set[str]:
        """The ids of sources not (or no longer) fully indexed, whose chunks no search may
        return: one being indexed has chunks in the stores before it counts as indexed,
        one whose process was killed keeps them until it is indexed again, and a store may
        still hold chunks of one removed or failed (its clean-up could not reach it;
        recovery or ``index check --repair`` finishes it)."""
        with Session(self.resources.engine) as session:
            return set(
                session.exec(
                    select(Source.id).where(
                        Source.index_id == self.id, col(Source.status) != SourceStatus.INDEXED
                    )
                )
            )

    def selection_filter(self, selected: Collection[str] | None) -> list[str] | None:
        """The source ids to filter on for ``selected``, or ``None`` for no filter at all.

        Selecting every indexed source is the same as selecting nothing in particular, and
        without a filter Chroma searches its HNSW index directly.
        """
        if selected is None:
            return None
        chosen = set(selected)
        indexed = self.indexed_source_ids()
        if chosen and indexed and indexed <= chosen:
            return None
        return sorted(chosen)

    def list_sources(self) -> list[dict[str, Any]]:
        with Session(self.resources.engine) as session:
            rows = list(
                session.exec(
                    select(Source)
                    .where(Source.index_id == self.id)
                    .order_by(col(Source.created_at))
                )
            )
        listing = []
        for s in rows:
            # An interrupted file shows as queued, with when it will be indexed again.
            status, reason = shown_state(s, self)
            listing.append(
                {
                    "id": s.id,
                    "name": s.name,
                    "status": status,
                    "reason": reason,
                    "chunks": s.chunk_count,
                    "size": s.size,
                    "sha256": s.sha256,
                    "attempts": s.attempts,
                    "updated_at": s.updated_at.isoformat(),
                }
            )
        return listing

    def remove_source(self, name_or_id: str) -> bool:
        with Session(self.resources.engine) as session:
            rows = session.exec(
                select(Source).where(
                    Source.index_id == self.id,
                    (Source.id == name_or_id) | (Source.name == name_or_id),
                )
            ).all()
        for row in rows:
            self.get_indexing_pipeline({}).remove(row.id)
        return bool(rows)

    def reindex_source(self, source_id: str) -> FileOutcome | None:
        """Index a file again from its stored copy, with the index's settings of now.

        A file that work is underway on (being indexed, or removed) is left alone and its
        outcome says so; one whose stored copy is gone is failed with that reason.
        """
        pipeline = self.get_indexing_pipeline({})
        with Session(self.resources.engine) as session:
            source = session.get(Source, source_id)
        if source is None or source.index_id != self.id:
            return FileOutcome(source_id, "failed", reason="no such file in this index")
        lock = pipeline.work_locks.lock(source_id)
        if not lock.acquire(blocking=False):
            return FileOutcome(
                source.name,
                "failed",
                reason="it is being worked on: try later",
                source_id=source_id,
            )
        try:
            return pipeline.reingest(source_id, lost_reason=STORED_COPY_LOST_REASON)
        finally:
            lock.release()
