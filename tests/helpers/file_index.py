"""A real file index in a folder, with :class:`HashEmbeddings`, for tests of what it indexes.

No model loads: the embeddings hash words. The database, Chroma and the full-text store
are real, so ``index.check()`` compares real stores: the laptop's embedded ones (a SQLite
file, Chroma on a folder, a BM25 file) or, given :class:`StoreSetup` of servers,
PostgreSQL (with the full text) and a Chroma server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.loaders import FileReader
from ragloom_app.index.file import FileIndex
from ragloom_app.settings import AppSettings
from ragloom_app.testing import create_hash_index

__all__ = ["EMBEDDED", "StoreSetup", "hash_file_index"]


@dataclass(frozen=True)
class StoreSetup:
    """Where a test index keeps its data: the embedded stores, unless these name servers."""

    name: str = "embedded"
    database_url: str | None = None
    chroma_server: str | None = None

    def servers(self) -> dict[str, str | None]:
        """The :class:`AppSettings` fields that name the servers (``None``: embedded)."""
        return {"database_url": self.database_url, "chroma_server": self.chroma_server}

    def app_settings(self, data_dir: Path, **fields: Any) -> AppSettings:
        """An app's settings over ``data_dir`` on these stores; ``fields`` are more
        :class:`AppSettings` fields."""
        return AppSettings(
            data_dir=data_dir,
            database_url=self.database_url,
            chroma_server=self.chroma_server,
            **fields,
        )


#: The laptop's defaults: everything in the index's folder.
EMBEDDED = StoreSetup()


def hash_file_index(
    root: Path,
    readers: Mapping[str, FileReader] | None = None,
    setup: StoreSetup = EMBEDDED,
    **limits: Any,
) -> FileIndex:
    """A new file index under ``root`` on ``setup``'s stores, reading with ``readers``
    (default: the built-ins).

    ``limits`` are :class:`IndexResources` fields (``max_file_chunks=10``...).
    """
    if setup.chroma_server is not None:
        limits.setdefault("chroma_server", setup.chroma_server)
    _, index = create_hash_index(
        FileIndex, root, name="test", readers=readers, database_url=setup.database_url, **limits
    )
    assert isinstance(index, FileIndex)
    return index


def one_chunk_documents(folder: Path, count: int) -> list[Path]:
    """``count`` one-chunk Markdown files in ``folder``, each with content of its own."""
    folder.mkdir(exist_ok=True)
    paths = []
    for n in range(count):
        path = folder / f"doc{n}.md"
        path.write_text(f"Document {n} says the Zorblax code is {1000 + n}.", encoding="utf-8")
        paths.append(path)
    return paths
