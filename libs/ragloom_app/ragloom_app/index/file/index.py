"""The file index: files chunked into Chroma (vectors) and BM25 (terms), fused at query."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

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
from ragloom.retrieval.restricted import RestrictedRetriever
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, ChromaVectorStore, FullTextStore, PostgresFullTextStore
from ragloom.stores.chroma import chroma_http_client
from ragloom_app.db.models import ChunkRecord, Source, SourceStatus
from ragloom_app.index.base import BaseIndex, CheckReport, FileOutcome
from ragloom_app.index.file.archives import ARCHIVE_SUFFIXES
from ragloom_app.index.file.consistency import FileIndexChecker
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.recovery import clean_leftovers, recover_index, shown_state
from ragloom_app.index.file.worklock import WorkLock
from ragloom_app.index.settings import REQUEST_KEYS
from ragloom_app.reasoning.base import SettingSpec
from ragloom_app.settings import chroma_address

__all__ = ["RETRIEVAL_MODES", "VISIBILITIES", "FileIndex"]

RETRIEVAL_MODES = ("hybrid", "vector", "fulltext")
"""Values of the ``retrieval_mode`` setting: both retrievers fused, or one alone."""

_RETRIEVAL_MODE_LABELS = ("Hybrid", "Vector", "Full-text")

VISIBILITIES = ("private", "shared")

logger = logging.getLogger(__name__)

STORED_COPY_LOST_REASON = "its stored copy is gone: upload the file again"


def _file_types(readers: Mapping[str, FileReader]) -> list[str]:
    """Extensions a file index can take: those a reader reads, and zip archives of them."""
    return sorted({*readers, *ARCHIVE_SUFFIXES})


class FileIndex(BaseIndex):
    """Documents (.txt, .md, .pdf) searched by vectors and full text, fused by rank."""

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        return cls.admin_settings_for(default_readers())

    @classmethod
    def admin_settings_for(cls, readers: Mapping[str, FileReader]) -> dict[str, dict[str, Any]]:
        """The settings, with every file type of ``readers`` (plugins' too) offered."""
        file_types = _file_types(readers)
        return {
            "chunk_size": {
                "name": "Chunk size (tokens)",
                "value": 240,
                "component": "number",
                "info": "Tokens of the embedding model per chunk.",
            },
            "chunk_overlap": {
                "name": "Chunk overlap (tokens)",
                "value": 36,
                "component": "number",
            },
            "extensions": {
                "name": "File types",
                "value": file_types,
                "component": "dropdown",
                "choices": file_types,
                "multiselect": True,
            },
            "visibility": {
                "name": "Visibility",
                "value": "private",
                "component": "dropdown",
                "choices": list(VISIBILITIES),
                "info": "Private: only its owner searches it; shared: every user does.",
            },
        }

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        """How a request searches this index: the mode, the definition prior, MMR, LLM reranking."""
        return {
            "retrieval_mode": {
                "name": "Search",
                "value": "hybrid",
                "component": "dropdown",
                "choices": list(zip(_RETRIEVAL_MODE_LABELS, RETRIEVAL_MODES, strict=True)),
                "info": "Vector search matches meaning, full-text (BM25) matches words; "
                "hybrid fuses both rankings and finds the most.",
            },
            "definition_prior": {
                "name": "Reference pages first",
                # Off until measured to help: on SQLite's manual it moved one question out of
                # the first place and none into the first three (docs/performance.md).
                "value": False,
                "component": "checkbox",
                "info": "Hybrid search: when the question names a function, option or constant, "
                "the passage that defines it (as a heading, term or signature) comes before "
                "passages that only mention it.",
            },
            "mmr": {
                "name": "Diverse passages (MMR)",
                "value": False,
                "component": "checkbox",
                "info": "Prefer passages that do not repeat each other.",
            },
            "mmr_lambda": {
                "name": "MMR relevance weight (λ)",
                "value": 0.5,
                "component": "number",
                "minimum": 0.0,
                "maximum": 1.0,
                "step": 0.1,
                "info": "1: relevance only; 0: diversity only.",
            },
            "rerank": {
                "name": "Check each passage with the LLM",
                "value": False,
                "component": "checkbox",
                "info": "One LLM call per passage keeps only relevant ones: slow and weak "
                "with the small default model.",
            },
        }

    @classmethod
    def normalize_config(
        cls, config: Mapping[str, Any], readers: Mapping[str, FileReader] | None = None
    ) -> dict[str, Any]:
        """``config`` with every admin setting checked and typed; raises ``ValueError``.

        Settings left out keep their defaults; unknown keys are refused, so a typo never
        passes silently. File types must be read by one of ``readers`` (default: the
        built-in readers); a list of all of them is left out of the result, so that the
        index also takes the file types of plugins installed later (see :meth:`setting`).
        """
        readers = default_readers() if readers is None else readers
        specs = cls.admin_settings_for(readers)
        unknown = sorted(set(config) - set(specs))
        if unknown:
            raise ValueError(f"unknown index settings: {', '.join(unknown)}")
        values = {key: config.get(key, spec["value"]) for key, spec in specs.items()}
        try:
            size, overlap = int(values["chunk_size"]), int(values["chunk_overlap"])
        except (TypeError, ValueError):
            raise ValueError("chunk size and overlap must be whole numbers") from None
        if size < 16:
            raise ValueError(f"chunk size must be at least 16 tokens, got {size}")
        if not 0 <= overlap < size:
            raise ValueError(f"chunk overlap must be in [0, chunk size), got {overlap}")
        extensions = [str(e).lower() for e in values["extensions"] or []]
        known = set(_file_types(readers))
        if not extensions or not set(extensions) <= known:
            raise ValueError(
                f"file types must be some of {', '.join(sorted(known))}, got {extensions}"
            )
        if values["visibility"] not in VISIBILITIES:
            raise ValueError(f"visibility must be private or shared, got {values['visibility']!r}")
        normalized = {**values, "chunk_size": size, "chunk_overlap": overlap}
        if set(extensions) == known:
            del normalized["extensions"]
        else:
            normalized["extensions"] = sorted(set(extensions))
        return normalized

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
        """The Chroma collection of this index."""
        return f"ragloom_index_{self.id}"

    @cached_property
    def vector_store(self) -> ChromaVectorStore:
        """Chunk vectors: on the Chroma server of ``CHROMA_SERVER``, else in the app's
        embedded Chroma folder."""
        server = self.resources.chroma_server
        if server is None:
            return ChromaVectorStore(
                self.collection_name, path=self.resources.shared_dir / "chroma"
            )
        host, port, tls = chroma_address(server)
        return ChromaVectorStore(self.collection_name, client=chroma_http_client(host, port, tls))

    @cached_property
    def fulltext_store(self) -> FullTextStore:
        """Chunk terms: in the app's PostgreSQL database when the app puts them there
        (``FULLTEXT_STORE``), else in a BM25 file in this index's folder."""
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
        """Compare the database, Chroma and the full-text store; ``repair`` fixes them."""
        return FileIndexChecker(self.get_indexing_pipeline({}), self.name).check(repair=repair)

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
        )

    @property
    def files_dir(self) -> Path:
        """Stored copies of the indexed files, named by content hash."""
        return self.resources.data_dir / "files"

    @property
    def locks_dir(self) -> Path:
        """Lock files of work in progress (the pipeline's)."""
        return self.resources.data_dir / "locks"

    @property
    def tmp_dir(self) -> Path:
        """Temporary folders (expanded archives), removed after use."""
        return self.resources.data_dir / "tmp"

    def get_indexing_pipeline(self, settings: Mapping[str, Any]) -> FileIndexingPipeline:
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
        then no filter is passed, as Chroma's ``$in`` filter is slow.
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

    def indexed_source_ids(self) -> set[str]:
        """The ids of this index's sources that are fully indexed (searchable)."""
        with Session(self.resources.engine) as session:
            rows = session.exec(
                select(Source.id).where(
                    Source.index_id == self.id, Source.status == SourceStatus.INDEXED
                )
            )
            return set(rows)

    def selection_filter(self, selected: Collection[str] | None) -> list[str] | None:
        """The source ids to filter on for ``selected``, or ``None`` for no filter at all.

        Selecting every indexed source is the same as selecting nothing in particular, and
        without a filter Chroma searches its HNSW index directly.
        """
        if selected is None:
            return None
        chosen = set(selected)
        if chosen and self.indexed_source_ids() <= chosen:
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
        locks_dir = self.locks_dir
        listing = []
        for s in rows:
            # An interrupted file shows as queued, with when it will be indexed again.
            status, reason = shown_state(s, locks_dir)
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
        lock = WorkLock(pipeline.locks_dir, source_id)
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
