"""BaseApp: reads the settings, registers reasoning modes and index types, holds models."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragloom.agents.tools import ToolRegistry
from ragloom.embeddings import Embeddings
from ragloom.llms.base import ChatLLM
from ragloom_app.db.engine import create_db_engine
from ragloom_app.index.base import FileOutcome, IndexingProgress, IndexResources
from ragloom_app.index.manager import IndexManager
from ragloom_app.privacy import switch_off_telemetry
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState
from ragloom_app.registry import build_from_spec, import_subclass
from ragloom_app.settings import AppSettings, SettingsError

__all__ = ["BaseApp"]

logger = logging.getLogger(__name__)


class BaseApp:
    """The app without its UI: settings, database, registries, indices and models.

    Nothing happens at construction; :meth:`start` creates the data folder and the
    database, imports what the settings name (a wrong dotted path stops it with an error
    naming the setting), and creates the indices of ``INDICES``.
    """

    def __init__(self, settings: AppSettings | None = None) -> None:
        self.settings = settings or AppSettings.load()
        self.reasonings: dict[str, type[BaseReasoning]] = {}
        self.tools = ToolRegistry()
        self.index_manager: IndexManager | None = None
        self._llms: dict[str, ChatLLM] = {}
        self._embeddings: Embeddings | None = None
        self._lock = threading.Lock()
        self.started = False

    # -- startup ---------------------------------------------------------------------------
    def start(self) -> BaseApp:
        """Create folders and tables, register plugins, create and start the indices."""
        if self.started:
            return self
        switch_off_telemetry()
        data_dir = self.settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.engine = create_db_engine(self.settings.database)
        self._register_reasonings()
        if self.settings.default_reasoning not in self.reasonings:
            raise SettingsError(
                f"DEFAULT_REASONING: {self.settings.default_reasoning!r} is not a registered "
                f"mode ({', '.join(self.reasonings)})"
            )
        if self.settings.default_llm not in self.settings.llms:
            raise SettingsError(
                f"DEFAULT_LLM: {self.settings.default_llm!r} is not in LLMS "
                f"({', '.join(self.settings.llms)})"
            )
        manager = IndexManager(self.engine, self._index_resources)
        manager.load_types(self.settings.index_types)
        manager.start(self.settings.indices)
        self.index_manager = manager
        self.started = True
        logger.info(
            "Ragloom started: data in %s, modes %s, indices %s",
            data_dir,
            ", ".join(self.reasonings),
            ", ".join(i.name for i in manager.indices),
        )
        return self

    def _register_reasonings(self) -> None:
        for position, path in enumerate(self.settings.reasonings):
            cls = import_subclass(f"REASONINGS[{position}]", path, BaseReasoning)
            self.register_reasoning(cls)

    def register_reasoning(self, cls: type[BaseReasoning]) -> None:
        """Make a reasoning mode selectable under its id (a later one with the same id wins)."""
        mode_id = cls.get_info().id
        if mode_id in self.reasonings and self.reasonings[mode_id] is not cls:
            logger.warning(
                "reasoning id %r registered twice (%s, then %s); the later one wins",
                mode_id,
                self.reasonings[mode_id].__qualname__,
                cls.__qualname__,
            )
        self.reasonings[mode_id] = cls

    def _index_resources(self, index_id: int) -> IndexResources:
        return IndexResources(
            engine=self.engine,
            data_dir=self.settings.data_dir / "indices" / str(index_id),
            shared_dir=self.settings.data_dir,
            embeddings=self.embeddings,
        )

    @property
    def indices(self) -> IndexManager:
        """The index manager (the app must be started)."""
        if self.index_manager is None:
            raise RuntimeError("call BaseApp.start() first")
        return self.index_manager

    # -- models ----------------------------------------------------------------------------
    def llm(self, name: str | None = None) -> ChatLLM:
        """The LLM named in ``LLMS`` (default: ``DEFAULT_LLM``), built once."""
        name = name or self.settings.default_llm
        with self._lock:
            if name not in self._llms:
                if name not in self.settings.llms:
                    raise SettingsError(f"no LLM named {name!r} in LLMS")
                self._llms[name] = build_from_spec(f"LLMS[{name!r}]", self.settings.llms[name])
            return self._llms[name]

    def embeddings(self) -> Embeddings:
        """The embedding model of ``DEFAULT_EMBEDDING``, built once."""
        with self._lock:
            if self._embeddings is None:
                name = self.settings.default_embedding
                spec = self.settings.embeddings.get(name)
                if spec is None:
                    raise SettingsError(f"DEFAULT_EMBEDDING: no embedding named {name!r}")
                self._embeddings = build_from_spec(f"EMBEDDINGS[{name!r}]", spec)
            return self._embeddings

    def reasoning_state(self, **values: Any) -> ReasoningState:
        """A request's state: the default LLM, the registered tools, LLMs by name."""
        return ReasoningState(llm=self.llm(), tools=self.tools, llm_named=self.llm, **values)

    # -- first run ---------------------------------------------------------------------------
    def seed_first_run(self) -> Iterator[IndexingProgress | FileOutcome]:
        """On an empty app, index ``FIRST_RUN_DOCS`` so a new user can ask at once."""
        seed = self.settings.first_run_docs
        if not seed or any(index.list_sources() for index in self.indices.indices):
            return
        folder = Path(seed["path"])
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        if not files:
            logger.info("first run: no documents in %s to index", folder)
            return
        name = seed.get("index", "Ragloom docs")
        try:
            index = self.indices.get(name)
        except KeyError:
            index = self.indices.create(name, seed.get("type", self.settings.index_types[0]))
        logger.info("first run: indexing %d files of %s into %r", len(files), folder, name)
        yield from index.get_indexing_pipeline({}).stream(files)

    def describe(self) -> dict[str, Any]:
        """What the app runs with, for ``ragloom`` listings and the UI."""
        return {
            "settings": self.settings.source,
            "data_dir": str(self.settings.data_dir),
            "reasonings": {k: v.get_info().name for k, v in self.reasonings.items()},
            "tools": self.tools.names(),
            "indices": [i.name for i in self.indices.indices],
            "llm": self.settings.default_llm,
        }
