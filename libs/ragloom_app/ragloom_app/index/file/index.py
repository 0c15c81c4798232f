"""The file index: files chunked into Chroma (vectors) and BM25 (terms), fused at query."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection, Mapping
from functools import cached_property
from typing import Any

from sqlmodel import Session, delete, select

from ragloom.indexing import FileIngestor
from ragloom.loaders import default_readers
from ragloom.retrieval import FullTextRetriever, HybridRetriever, Retriever, VectorRetriever
from ragloom.retrieval.restricted import RestrictedRetriever
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, ChromaVectorStore
from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.file.pipeline import FileIndexingPipeline

__all__ = ["FileIndex"]

logger = logging.getLogger(__name__)


class FileIndex(BaseIndex):
    """Documents (.txt, .md, .pdf) searched by vectors and full text, fused by rank."""

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        return {
            "chunk_size": {
                "name": "Chunk size (tokens)",
                "value": 200,
                "component": "number",
                "info": "Tokens of the embedding model per chunk.",
            },
            "chunk_overlap": {
                "name": "Chunk overlap (tokens)",
                "value": 30,
                "component": "number",
            },
            "extensions": {
                "name": "File types",
                "value": sorted(default_readers()),
                "component": "dropdown",
                "choices": sorted(default_readers()),
                "multiselect": True,
            },
        }

    def setting(self, key: str) -> Any:
        """A setting of this index: its config, else the type's default."""
        if key in self.config:
            return self.config[key]
        return self.get_admin_settings()[key]["value"]

    @property
    def collection_name(self) -> str:
        """The Chroma collection of this index."""
        return f"ragloom_index_{self.id}"

    @cached_property
    def vector_store(self) -> ChromaVectorStore:
        """Chunk vectors, in the app's Chroma folder."""
        return ChromaVectorStore(self.collection_name, path=self.resources.shared_dir / "chroma")

    @cached_property
    def fulltext_store(self) -> BM25Store:
        """Chunk terms, in this index's folder."""
        return BM25Store(self.resources.data_dir / "bm25")

    def on_delete(self) -> None:
        self.vector_store.drop()
        self.fulltext_store.drop()
        with Session(self.resources.engine) as session:
            session.exec(delete(ChunkRecord).where(ChunkRecord.index_id == self.id))
            session.exec(delete(Source).where(Source.index_id == self.id))
            session.commit()
        shutil.rmtree(self.resources.data_dir, ignore_errors=True)

    def _ingestor(self) -> FileIngestor:
        embeddings = self.resources.embeddings()
        splitter = TokenSplitter(
            chunk_size=int(self.setting("chunk_size")),
            chunk_overlap=int(self.setting("chunk_overlap")),
            tokenizer=embeddings.count_tokens,
        )
        return FileIngestor(
            splitter=splitter,
            embeddings=embeddings,
            vector_store=self.vector_store,
            fulltext_store=self.fulltext_store,
        )

    def get_indexing_pipeline(self, settings: Mapping[str, Any]) -> FileIndexingPipeline:
        return FileIndexingPipeline(
            index_id=self.id,
            engine=self.resources.engine,
            ingestor=self._ingestor(),
            files_dir=self.resources.data_dir / "files",
            extensions=self.setting("extensions"),
            max_file_bytes=self.resources.max_file_bytes,
            owner=str(settings.get("owner", "local")),
        )

    def get_retriever_pipelines(
        self, settings: Mapping[str, Any], selected: Collection[str] | None = None
    ) -> list[Retriever]:
        top_k = int(settings.get("top_k", 5))
        vector = VectorRetriever(
            store=self.vector_store, embeddings=self.resources.embeddings(), top_k=top_k
        )
        fulltext = FullTextRetriever(store=self.fulltext_store, top_k=top_k)
        hybrid = HybridRetriever(retrievers=[vector, fulltext], top_k=top_k)
        if selected is not None:
            return [RestrictedRetriever(inner=hybrid, source_ids=list(selected), top_k=top_k)]
        return [hybrid]

    def list_sources(self) -> list[dict[str, Any]]:
        with Session(self.resources.engine) as session:
            rows = session.exec(
                select(Source).where(Source.index_id == self.id).order_by(Source.created_at)
            )
            return [
                {
                    "id": s.id,
                    "name": s.name,
                    "status": str(s.status),
                    "reason": s.reason,
                    "chunks": s.chunk_count,
                    "size": s.size,
                    "sha256": s.sha256,
                    "updated_at": s.updated_at.isoformat(),
                }
                for s in rows
            ]

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
