"""Where chunks are kept for retrieval: a vector store and a full-text store (a BM25 file,
or PostgreSQL).

The implementations are imported on first use (PEP 562), so importing this package does
not pay for chromadb (~0.8 s) or bm25s unless they are needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.lazy import lazy_exports
from ragloom.stores.base import FullTextStore, StoreUnavailableError, VectorStore

if TYPE_CHECKING:
    from ragloom.stores.bm25 import BM25Store, tokenize
    from ragloom.stores.chroma import ChromaVectorStore, chroma_client, chroma_http_client
    from ragloom.stores.postgres_fulltext import PostgresFullTextStore

__all__ = [
    "BM25Store",
    "ChromaVectorStore",
    "FullTextStore",
    "PostgresFullTextStore",
    "StoreUnavailableError",
    "VectorStore",
    "chroma_client",
    "chroma_http_client",
    "tokenize",
]

_LAZY = {
    "BM25Store": "ragloom.stores.bm25",
    "tokenize": "ragloom.stores.bm25",
    "ChromaVectorStore": "ragloom.stores.chroma",
    "chroma_client": "ragloom.stores.chroma",
    "chroma_http_client": "ragloom.stores.chroma",
    "PostgresFullTextStore": "ragloom.stores.postgres_fulltext",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
