"""The index plugin slot: a type of index, its indexing pipeline and its retrievers.

The app lists index types in ``INDEX_TYPES`` and the indices to create in ``INDICES``
(flowsettings.py). :class:`~ragloom_app.index.manager.IndexManager` builds one object of
the right type per index and calls its lifecycle hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.engine import Engine

from ragloom.embeddings import Embeddings
from ragloom.retrieval import Retriever

__all__ = [
    "BaseIndex",
    "FileOutcome",
    "IndexResources",
    "IndexingPipeline",
    "IndexingProgress",
]


@dataclass(frozen=True)
class IndexResources:
    """What the app lends an index: the database, folders, the embeddings.

    ``data_dir`` belongs to the index alone; ``shared_dir`` is the app's data folder, for
    stores that hold every index (Chroma keeps one collection per index there).
    """

    engine: Engine
    data_dir: Path
    shared_dir: Path
    embeddings: Callable[[], Embeddings]
    max_file_bytes: int = 200 * 1024 * 1024


@dataclass(frozen=True)
class IndexingProgress:
    """Progress of one file: ``fraction`` of the whole upload done, and what happens."""

    name: str
    fraction: float
    message: str


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file: ``indexed``, ``skipped`` (already there) or ``failed``."""

    name: str
    status: Literal["indexed", "skipped", "failed"]
    chunks: int = 0
    reason: str | None = None
    source_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by ``ragloom index add --json``."""
        return {
            "file": self.name,
            "status": self.status,
            "chunks": self.chunks,
            "reason": self.reason,
            "source_id": self.source_id,
        }


class IndexingPipeline:
    """Adds files to an index, one outcome per file; one bad file never stops the rest."""

    def stream(
        self, paths: Sequence[Path], *, reindex: bool = False, names: Sequence[str] | None = None
    ) -> Iterator[IndexingProgress | FileOutcome]:
        """Index ``paths`` (shown as ``names`` if given), yielding progress and outcomes."""
        raise NotImplementedError(f"{type(self).__name__} must implement stream()")

    def run(
        self, paths: Sequence[Path], *, reindex: bool = False, names: Sequence[str] | None = None
    ) -> list[FileOutcome]:
        """Index ``paths`` and return the outcome of each file."""
        events = self.stream(paths, reindex=reindex, names=names)
        return [e for e in events if isinstance(e, FileOutcome)]


@dataclass
class BaseIndex:
    """An index of one type. Subclasses implement the pipelines and may use the hooks."""

    id: int
    name: str
    config: dict[str, Any]
    resources: IndexResources

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        """Settings an index of this type is created with (same shape as user settings)."""
        return {}

    def on_create(self) -> None:
        """Called once when the index is created."""

    def on_start(self) -> None:
        """Called at every app start, after creation."""

    def on_delete(self) -> None:
        """Called when the index is deleted: remove everything it stored."""

    def get_indexing_pipeline(self, settings: Mapping[str, Any]) -> IndexingPipeline:
        """The pipeline that adds files to this index."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_indexing_pipeline()")

    def get_retriever_pipelines(
        self, settings: Mapping[str, Any], selected: Collection[str] | None = None
    ) -> list[Retriever]:
        """Retrievers over this index, limited to the ``selected`` source ids if given."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_retriever_pipelines()")

    def list_sources(self) -> list[dict[str, Any]]:
        """The sources of this index, for listings (may be empty)."""
        return []

    def remove_source(self, name_or_id: str) -> bool:
        """Remove a source from every store; ``False`` if there is no such source."""
        return False
