"""Where chunks are kept for retrieval: a vector store and a full-text store.

The implementations are imported on first use (PEP 562), so importing this package does
not pay for chromadb (~0.8 s) or bm25s unless they are needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragloom.stores.base import FullTextStore, VectorStore

if TYPE_CHECKING:
    from ragloom.stores.bm25 import BM25Store, tokenize
    from ragloom.stores.chroma import ChromaVectorStore, chroma_client, chroma_http_client

__all__ = [
    "BM25Store",
    "ChromaVectorStore",
    "FullTextStore",
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
}


def __getattr__(name: str) -> Any:
    """Import an implementation the first time it is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
