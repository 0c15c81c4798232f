"""The index plugin slot: a type of index, its indexing pipeline and its retrievers.

The app lists index types in ``INDEX_TYPES`` and the indices to create in ``INDICES``
(flowsettings.py). :class:`~ragloom_app.index.manager.IndexManager` builds one object of
the right type per index and calls its lifecycle hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy.engine import Engine

from ragloom.chunking import MAX_FILE_CHUNKS, MAX_FILE_SECONDS, MIN_FILE_SECONDS
from ragloom.embeddings import Embeddings
from ragloom.loaders import FileReader, default_readers
from ragloom.loaders.archive import ZipLimits
from ragloom.retrieval import Retriever
from ragloom_app.index.budget import MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS
from ragloom_app.index.settings import resolve_values, typed_setting_value
from ragloom_app.reasoning.base import SettingSpec

if TYPE_CHECKING:
    from ragloom.stores.postgres_fulltext import ConnectionFactory
    from ragloom_app.db.advisory import AdvisoryLocks

__all__ = [
    "BaseIndex",
    "CheckProblem",
    "CheckReport",
    "FileOutcome",
    "IndexResources",
    "IndexingPipeline",
    "IndexingProgress",
]


@dataclass(frozen=True)
class IndexResources:
    """What the app lends an index: the database, folders, the embeddings, the readers.

    ``data_dir`` belongs to the index alone; ``shared_dir`` is the app's data folder, for
    stores that hold every index (Chroma keeps one collection per index there).
    ``readers`` maps extensions to file readers: the built-ins and those of plugins.

    The limits on what is indexed (docs/indices.md says why each default):

    - ``max_file_bytes``: the largest file;
    - ``max_file_chunks`` and ``max_file_seconds``: what one file may make and take to be
      read and chunked, whatever its reader; ``min_file_seconds``: what a small file may
      take (a larger one has more, by its size: :func:`ragloom.chunking.file_seconds`);
    - ``max_upload_bytes`` and ``max_upload_chunks``: what one upload (its files, what its
      archives unpack to, the chunks they make) may spend in all;
    - ``archive_limits``: what a zip may unpack to (:class:`ZipLimits`).

    ``chroma_server`` (``http://host:port``) puts vectors on a Chroma server instead of the
    embedded Chroma in ``shared_dir``; ``fulltext_connect`` (connections to the app's
    PostgreSQL database) puts the full text there instead of a file in ``data_dir``.
    ``store_name`` names the index's collections in such shared stores
    (:attr:`BaseIndex.store_name`). ``shared_locks`` (the database's advisory locks, when
    it is PostgreSQL) are locks every process of the deployment sees, for work that
    processes with data folders of their own must not do twice or take from a live one.
    """

    engine: Engine
    data_dir: Path
    shared_dir: Path
    embeddings: Callable[[], Embeddings]
    max_file_bytes: int = 200 * 1024 * 1024
    readers: Mapping[str, FileReader] = field(default_factory=default_readers)
    max_file_chunks: int = MAX_FILE_CHUNKS
    max_file_seconds: float = MAX_FILE_SECONDS
    min_file_seconds: float = MIN_FILE_SECONDS
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    max_upload_chunks: int = MAX_UPLOAD_CHUNKS
    archive_limits: ZipLimits = field(default_factory=ZipLimits)
    chroma_server: str | None = None
    fulltext_connect: ConnectionFactory | None = None
    store_name: str | None = None
    shared_locks: AdvisoryLocks | None = None


@dataclass(frozen=True)
class IndexingProgress:
    """Progress of one file: ``fraction`` of the whole upload done, and what happens.

    ``waiting`` says the upload is waiting, holding no file (for a copy of this one that
    another upload is indexing): the caller may stop it here (a job's cancel) as safely as
    between two files. Such an event comes again every few seconds while it waits.
    """

    name: str
    fraction: float
    message: str
    waiting: bool = False


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


@dataclass
class CheckProblem:
    """One disagreement found by :meth:`BaseIndex.check`, and whether it was repaired.

    ``kind`` is a short stable id (e.g. ``missing_chunks``), ``message`` says it for a
    person, ``store`` names the store concerned (if one is), ``ids`` are the chunk or
    source ids concerned.
    """

    kind: str
    message: str
    store: str | None = None
    ids: list[str] = field(default_factory=list)
    repaired: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by ``ragloom index check --json``."""
        return asdict(self)


@dataclass
class CheckReport:
    """What :meth:`BaseIndex.check` found in one index.

    ``counts`` says what was compared (sources, chunks per store); ``notes`` are facts
    that are not problems (e.g. a file being indexed right now by another process).
    """

    index: str
    problems: list[CheckProblem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """No problem was found."""
        return not self.problems

    @property
    def ok(self) -> bool:
        """Every problem found was repaired (true when clean)."""
        return all(p.repaired for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by ``ragloom index check --json``."""
        return {
            "index": self.index,
            "ok": self.ok,
            "clean": self.clean,
            "counts": dict(self.counts),
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
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

    @property
    def store_name(self) -> str:
        """The name of this index's collection in a store that holds many indices, of
        several deployments perhaps (a Chroma server): random, given at creation, or
        ``ragloom_index_<id>`` for an index made before names were given."""
        return self.resources.store_name or f"ragloom_index_{self.id}"

    @classmethod
    def get_admin_settings(cls) -> dict[str, dict[str, Any]]:
        """Settings an index of this type is created with (same shape as user settings)."""
        return {}

    @classmethod
    def admin_settings_for(cls, readers: Mapping[str, FileReader]) -> dict[str, dict[str, Any]]:
        """The admin settings in an app with these file ``readers`` (default: as above).

        Override it when a setting depends on the file types the app reads.
        """
        return cls.get_admin_settings()

    @classmethod
    def normalize_config(
        cls, config: Mapping[str, Any], readers: Mapping[str, FileReader] | None = None
    ) -> dict[str, Any]:
        """A new index's ``config`` checked and typed; raises ``ValueError`` if it is wrong.

        The default refuses keys that are not admin settings and values their specs do not
        allow (:func:`~ragloom_app.index.settings.typed_setting_value`), and types the
        others; the settings left out are not added (their defaults may change).
        """
        known = cls.admin_settings_for(default_readers() if readers is None else readers)
        unknown = sorted(set(config) - set(known))
        if unknown:
            raise ValueError(f"unknown index settings: {', '.join(unknown)}")
        return {key: typed_setting_value(key, known[key], value) for key, value in config.items()}

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        """The settings a user may change for one request, keyed by setting id (e.g. how
        to search); same specs as a reasoning mode's. The chat shows them per index, for
        every mode; :meth:`get_retriever_pipelines` gets their values."""
        return {}

    @classmethod
    def resolve_settings(cls, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The defaults of :meth:`get_user_settings` with the given values on top, each
        checked against its spec and typed; raises
        :class:`~ragloom_app.index.settings.IndexSettingsError` for a key the type does not
        declare or a value its spec does not allow."""
        return resolve_values(cls.get_user_settings(), given or {})

    def on_create(self) -> None:
        """Called once when the index is created."""

    def on_start(self) -> None:
        """Called at every app start (every command), after creation: keep it quick.

        Slow work a stopped process left unfinished belongs in :meth:`recover`.
        """

    def recover(self) -> list[FileOutcome]:
        """Finish work a process that stopped left unfinished; the outcome of each file.

        ``ragloom serve`` calls it in the background once the server listens (never at
        start, so work that crashes the process cannot keep the app from starting).
        """
        return []

    def on_delete(self) -> None:
        """Called when the index is deleted: remove everything it stored."""

    def busy_with(self) -> str | None:
        """What work under way, outside this process's knowing, deleting the index now
        would break (``"an import is filling it"``), asked before a user's deletion; None
        when there is none. The default knows of none."""
        return None

    def get_indexing_pipeline(self, settings: Mapping[str, Any]) -> IndexingPipeline:
        """The pipeline that adds files to this index."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_indexing_pipeline()")

    def get_retriever_pipelines(
        self, settings: Mapping[str, Any], selected: Collection[str] | None = None
    ) -> list[Retriever]:
        """Retrievers over this index, limited to the ``selected`` source ids if given.

        ``settings`` holds the values of :meth:`get_user_settings` (resolved by the chat
        page) and what the request decides (:data:`~ragloom_app.index.settings.REQUEST_KEYS`:
        ``llm``, ``top_k``).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement get_retriever_pipelines()")

    def find_terms(
        self, terms: Sequence[str], selected: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """Whether each of ``terms`` occurs in this index (in the ``selected`` source ids
        only, if given): True, False, or None when the index cannot tell.

        The check before answering (:mod:`ragloom.qa.precheck`) declines a question whose
        identifiers no index holds, so answer False only when sure: exact words as the
        index tokenizes them, a phrase when its words occur in order. Keep it fast (no
        scan of every text); past :data:`~ragloom.stores.bm25.terms.MAX_LOOKUP_TERMS`
        terms, answer None. The default answers None for every term: an index type that
        does not implement it is never taken to lack a term.
        """
        return dict.fromkeys(terms, None)

    def check(self, repair: bool = False) -> CheckReport:
        """Verify that this index's stores agree; with ``repair``, fix what does not.

        The default has nothing to compare and reports the index clean.
        """
        return CheckReport(self.name, notes=[f"{type(self).__name__} has nothing to check"])

    def list_sources(self) -> list[dict[str, Any]]:
        """The sources of this index, for listings (may be empty)."""
        return []

    def remove_source(self, name_or_id: str) -> bool:
        """Remove a source from every store; ``False`` if there is no such source."""
        return False

    def reindex_source(self, source_id: str) -> FileOutcome | None:
        """Index a source again from what the index kept of it (after its settings or a
        reader changed); ``None`` when this type of index cannot (the default)."""
        return None
