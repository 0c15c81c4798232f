"""A real file index in a folder, with :class:`HashEmbeddings`, for tests of what it indexes.

No model loads: the embeddings hash words. The database, Chroma and the BM25 store are
real, so ``index.check()`` compares real stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragloom.loaders import FileReader
from ragloom_app.index.file import FileIndex
from ragloom_app.testing import create_hash_index

__all__ = ["hash_file_index"]


def hash_file_index(
    root: Path, readers: Mapping[str, FileReader] | None = None, **limits: Any
) -> FileIndex:
    """A new file index under ``root`` reading with ``readers`` (default: the built-ins).

    ``limits`` are :class:`IndexResources` fields (``max_file_chunks=10``...).
    """
    _, index = create_hash_index(FileIndex, root, name="test", readers=readers, **limits)
    assert isinstance(index, FileIndex)
    return index
