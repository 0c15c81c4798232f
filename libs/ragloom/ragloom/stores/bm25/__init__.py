"""The full-text store: chunks scored by BM25, kept in one SQLite file per store.

- :mod:`~ragloom.stores.bm25.store`: :class:`BM25Store`, the store itself;
- :mod:`~ragloom.stores.bm25.index`: the in-memory index made of segments;
- :mod:`~ragloom.stores.bm25.schema`: the SQLite tables and their reads and writes;
- :mod:`~ragloom.stores.bm25.tokenizer`: :func:`tokenize`, a text's terms;
- :mod:`~ragloom.stores.bm25.upgrade`: tokenizing a database of another version again;
- :mod:`~ragloom.stores.bm25.vocab`: the term vocabulary.
"""

from __future__ import annotations

from ragloom.stores.bm25.store import BM25Store
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, tokenize

__all__ = ["TOKENIZER_VERSION", "BM25Store", "tokenize"]
