"""BaseApp: reads the settings, registers reasoning modes and index types, holds models.

Registration order at :meth:`BaseApp.start`: Ragloom's own plugin (what the settings
list: ``REASONINGS``, ``INDEX_TYPES``, ``LLMS``, ``EMBEDDINGS``, the built-in tools and
readers), then each installed plugin in order of distribution name, every entry through
the one :class:`~ragloom_app.plugins.registry.Registry`. On a shared id the later
registration wins, with a warning naming both (docs/plugins.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from ragloom.agents.tools import BaseTool, ToolRegistry
from ragloom.embeddings import Embeddings
from ragloom.llms.base import ChatLLM
from ragloom.llms.deadline import DeadlineLLM, UnfinishedCalls
from ragloom.loaders import FileReader
from ragloom_app import __version__
from ragloom_app.data_folder import PRIVATE_UMASK, make_private_folder
from ragloom_app.db.advisory import AdvisoryLocks
from ragloom_app.db.engine import create_db_engine, driver_connections
from ragloom_app.errors import UserFacingError
from ragloom_app.index.base import FileOutcome, IndexingProgress, IndexResources
from ragloom_app.index.manager import IndexManager
from ragloom_app.moved_data_folder import follow_moved_data_folder
from ragloom_app.plugins.manager import (
    LoadedPlugin,
    PluginInfo,
    collect_default_plugins,
    collect_plugins,
    create_plugin_manager,
    load_entry_point_plugins,
    normalize_name,
)
from ragloom_app.plugins.registry import Registry
from ragloom_app.plugins.slots import slots_of
from ragloom_app.privacy import switch_off_telemetry
from ragloom_app.reasoning.base import BaseReasoning, ReasoningState
from ragloom_app.registry import build_from_spec
from ragloom_app.settings import AppSettings, SettingsError

if TYPE_CHECKING:
    from ragloom.stores.postgres_fulltext import ConnectionFactory
    from ragloom_app.accounts import AccountStore
    from ragloom_app.jobs import JobService

__all__ = ["PRIVATE_UMASK", "BaseApp", "LLMNotOfferedError", "make_private_folder"]

logger = logging.getLogger(__name__)


class LLMNotOfferedError(UserFacingError, ValueError):
    """A request named an LLM that is not among those a user may choose (``SELECTABLE_LLMS``)."""


BUILTIN_PLUGIN_NAME = "ragloom (built-in)"
"""How ``ragloom plugins --all`` and the UI name Ragloom's own plugin."""

_URL_FORMS = "(PostgreSQL: postgresql+psycopg://USER@HOST/NAME; SQLite: sqlite:///PATH)"


def _database_engine(url: str) -> Engine:
    """The engine of the app database at ``url``; a URL no driver here takes is a
    :class:`SettingsError` naming the setting (SQLAlchemy's own was a traceback). The
    words never quote the URL, which may hold a password."""
    try:
        return create_db_engine(url)
    except NoSuchModuleError:
        scheme = make_url(url).drivername
        raise SettingsError(
            f"DATABASE_URL: no database driver of this installation takes {scheme!r} URLs "
            f"{_URL_FORMS}"
        ) from None
    except ArgumentError:  # not parsed as a URL at all
        raise SettingsError(f"DATABASE_URL: not a database URL {_URL_FORMS}") from None


class BaseApp:
    """The app without its UI: settings, database, registries, indices and models.

    Nothing happens at construction; :meth:`start` creates the data folder and the
    database, imports what the settings name (a wrong dotted path stops it with an error
    naming the setting), registers the plugins (a failing plugin is left out and listed
    in :attr:`plugins` with its error), and creates the indices of ``INDICES``.

    ``plugin_manager``: the plugins to use, as registered there; by default the plugins
    of the installed distributions' ``ragloom`` entry points. Ragloom's own plugin
    (:data:`~ragloom_app.plugins.manager.DEFAULT_PLUGINS`) is added to it and asked first;
    its record is :attr:`builtin_plugins`. :attr:`registry` holds every entry with its
    owner; :attr:`reasonings`, :attr:`readers`, :attr:`llm_specs` and
    :attr:`embedding_specs` are its tables, and :attr:`tools` (the agents' registry) is
    filled from it at start.
    """

    def __init__(
        self,
        settings: AppSettings | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
    ) -> None:
        self.settings = settings or AppSettings.load()
        self.plugin_manager = plugin_manager
        self.plugins: list[PluginInfo] = []
        self.builtin_plugins: list[PluginInfo] = []
        self.registry = Registry()
        # The registry's live tables: what start() registers appears in them.
        self.reasonings: dict[str, type[BaseReasoning]] = self.registry.table("reasonings")
        self.readers: dict[str, FileReader] = self.registry.table("readers")
        self.llm_specs: dict[str, dict[str, Any]] = self.registry.table("llms")
        self.embedding_specs: dict[str, dict[str, Any]] = self.registry.table("embeddings")
        self.tools = ToolRegistry(())
        self.index_manager: IndexManager | None = None
        self._llms: dict[str, ChatLLM] = {}
        self._accounts: AccountStore | None = None
        self._jobs: JobService | None = None
        self._embeddings: dict[str, Embeddings] = {}
        self._lock = threading.Lock()
        self.started = False

    # -- startup ---------------------------------------------------------------------------
    def start(self) -> BaseApp:
        """Create folders and tables, register plugins, create and start the indices."""
        if self.started:
            return self
        switch_off_telemetry()
        data_dir = self.settings.data_dir
        make_private_folder(data_dir)
        self.engine = _database_engine(self.settings.database)
        follow_moved_data_folder(self.engine, data_dir)
        self._register_plugins()
        self._check_registered_names()
        manager = IndexManager(self.engine, self._index_resources, self.readers)
        for type_id, index_type in self.registry.table("index_types").items():
            manager.register_type(type_id, index_type)
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

    def _check_registered_names(self) -> None:
        """Raise :class:`SettingsError`, naming the setting, for a mode, LLM or embedding
        that the settings choose and nothing registered."""
        settings, focus = self.settings, self.settings.focus_embedding
        modes = (self.reasonings, "a registered mode")
        llms, embeddings = (self.llm_specs, "in LLMS"), (self.embedding_specs, "in EMBEDDINGS")
        chosen: list[tuple[str, list[str], tuple[Mapping[str, object], str]]] = [
            ("DEFAULT_REASONING", [settings.default_reasoning], modes),
            ("DEFAULT_LLM", [settings.default_llm], llms),
            ("SELECTABLE_LLMS", list(settings.selectable_llms), llms),
            ("DEFAULT_EMBEDDING", [settings.default_embedding], embeddings),
            ("FOCUS_EMBEDDING", [focus] if focus else [], embeddings),
        ]
        for setting, names, (table, where) in chosen:
            for name in names:
                if name not in table:
                    raise SettingsError(f"{setting}: {name!r} is not {where} ({', '.join(table)})")

    def register_reasoning(self, cls: type[BaseReasoning], owner: str = "the app") -> None:
        """Make a reasoning mode selectable under its id (a later one with the same id wins)."""
        (slot,) = (s for s in slots_of("app") if s.kind == "reasonings")
        self.registry.register(slot, cls.get_info().id, cls, owner)

    def plugin_settings(self, name: str) -> dict[str, Any]:
        """A plugin's own settings: ``PLUGIN_SETTINGS[name]`` (the distribution's name,
        compared loosely: ``Ragloom_Plugin_X`` is ``ragloom-plugin-x``); ``{}`` if none."""
        wanted = normalize_name(name)
        # Keys compared loosely here too: settings set as attributes skip the check's
        # normalizing.
        for key, own in self.settings.plugin_settings.items():
            if normalize_name(key) == wanted:
                return dict(own)
        return {}

    def _register_plugins(self) -> None:
        """Register Ragloom's own plugin, then each installed one, through the registry."""
        disabled = self.settings.disabled_plugins
        infos: list[PluginInfo] = []
        if self.plugin_manager is None:
            self.plugin_manager = create_plugin_manager()
            infos = load_entry_point_plugins(self.plugin_manager, disabled)
        given = {"app": self}
        builtins = collect_default_plugins(
            self.plugin_manager, given, BUILTIN_PLUGIN_NAME, __version__
        )
        loaded = collect_plugins(self.plugin_manager, infos, disabled, given)
        self.builtin_plugins = [plugin.info for plugin in builtins]
        self.plugins = [plugin.info for plugin in loaded]
        for plugin in [*builtins, *loaded]:
            plugin.info.warnings = self._register_plugin(plugin)
        self.tools = ToolRegistry(self.registry.table("tools").values())
        if self.plugins:
            logger.info(
                "plugins: %s",
                ", ".join(f"{p.name} {p.version or ''}".strip() for p in self.plugins),
            )

    def _register_plugin(self, plugin: LoadedPlugin) -> list[str]:
        """Register one plugin's entries; returns the warnings of what it replaced."""
        info = plugin.info
        warnings: list[str] = []
        for slot in slots_of("app"):
            owner = slot.owner if info.builtin else f"plugin {info.name}"
            for key, value in plugin.contributions.entries[slot.kind]:
                warning = self.registry.register(slot, key, value, owner)
                if warning:
                    warnings.append(warning)
        return warnings

    def tools_by_name(self) -> dict[str, type[BaseTool]]:
        """The registered tool classes by name."""
        return dict(self.registry.table("tools"))

    def builtin_info(self) -> PluginInfo:
        """Ragloom's own plugin's record: what the settings and Ragloom registered."""
        (info,) = self.builtin_plugins
        return info

    def _index_resources(self, index_id: int) -> IndexResources:
        settings = self.settings
        budgets: dict[str, Any] = {
            name: value
            for name, value in (
                ("max_file_chunks", settings.max_file_chunks),
                ("max_file_seconds", settings.max_file_seconds),
                ("min_file_seconds", settings.min_file_seconds),
                ("max_upload_bytes", settings.max_upload_bytes),
                ("max_upload_chunks", settings.max_upload_chunks),
            )
            if value is not None  # None: the index's own default
        }
        return IndexResources(
            engine=self.engine,
            data_dir=settings.data_dir / "indices" / str(index_id),
            shared_dir=settings.data_dir,
            embeddings=self.embeddings,
            readers=self.readers,
            # The one per-file limit: gradio refuses the same size while receiving it.
            max_file_bytes=settings.max_file_bytes,
            chroma_server=settings.chroma_server,
            fulltext_connect=self._fulltext_connect,
            shared_locks=self._shared_locks,
            **budgets,
        )

    @cached_property
    def _fulltext_connect(self) -> ConnectionFactory | None:
        """Connections for the indices' full text: the app database's, when it is PostgreSQL
        and ``FULLTEXT_STORE`` is ``auto``; None keeps it in BM25 files."""
        if self.engine.dialect.name != "postgresql" or self.settings.fulltext_store != "auto":
            return None
        return driver_connections(self.engine)

    @cached_property
    def _shared_locks(self) -> AdvisoryLocks | None:
        """Work locks every app process and worker sees, whatever its data folder: the
        database's advisory locks, when it is PostgreSQL (one object per app, so that
        its indices' locks exclude each other as another process's do)."""
        if self.engine.dialect.name != "postgresql":
            return None
        return AdvisoryLocks(self.engine)

    @property
    def accounts(self) -> AccountStore:
        """The users, their sessions and API keys (one store per app, made at first use)."""
        if not self.started:
            raise RuntimeError("call BaseApp.start() first")
        with self._lock:
            if self._accounts is None:
                from ragloom_app.accounts import AccountStore

                self._accounts = AccountStore(self.engine)
            return self._accounts

    @property
    def jobs(self) -> JobService:
        """Indexing jobs: submit, follow, cancel (one service per app, made at first use;
        its queue starts at the first submit or :meth:`JobService.start`)."""
        if not self.started:
            raise RuntimeError("call BaseApp.start() first")
        with self._lock:
            if self._jobs is None:
                from ragloom_app.jobs import JobService

                self._jobs = JobService(self)
            return self._jobs

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
                if name not in self.llm_specs:
                    raise SettingsError(f"no LLM named {name!r} in LLMS")
                self._llms[name] = build_from_spec(f"LLMS[{name!r}]", self.llm_specs[name])
            return self._llms[name]

    def selectable_llm_names(self) -> list[str]:
        """The LLMs a user may choose for a mode (``DEFAULT_LLM`` and ``SELECTABLE_LLMS``)."""
        names = [self.settings.default_llm, *self.settings.selectable_llms]
        return list(dict.fromkeys(names))

    def selectable_llm(self, name: str) -> ChatLLM:
        """The LLM ``name`` if a user may choose it; :class:`LLMNotOfferedError` if not.

        Every request's ``llm_named`` is this, so a name sent through the API, the command
        line or a settings dict cannot reach a model the admin did not offer.
        """
        offered = self.selectable_llm_names()
        if name not in offered:
            raise LLMNotOfferedError(
                f"the LLM {name!r} cannot be chosen here; choose one of: {', '.join(offered)} "
                "(the administrator lists them in SELECTABLE_LLMS)"
            )
        return self.llm(name)

    def embeddings(self) -> Embeddings:
        """The embedding model of ``DEFAULT_EMBEDDING``, built once."""
        return self._embedding_named(self.settings.default_embedding, "DEFAULT_EMBEDDING")

    def focus_embeddings(self) -> Embeddings:
        """The model the sentence focus ranks sentences with: ``FOCUS_EMBEDDING``'s, else
        the default one (the same object); built once."""
        name = self.settings.focus_embedding or self.settings.default_embedding
        return self._embedding_named(name, "FOCUS_EMBEDDING")

    def _embedding_named(self, name: str, setting: str) -> Embeddings:
        with self._lock:
            if name not in self._embeddings:
                spec = self.embedding_specs.get(name)
                if spec is None:
                    raise SettingsError(f"{setting}: no embedding named {name!r}")
                self._embeddings[name] = build_from_spec(f"EMBEDDINGS[{name!r}]", spec)
            return self._embeddings[name]

    def reasoning_named(self, mode: str) -> type[BaseReasoning]:
        """The registered reasoning class whose id is ``mode``; ``KeyError`` naming the
        registered ids if there is none."""
        try:
            return self.reasonings[mode]
        except KeyError:
            raise KeyError(f"no mode {mode!r} (registered: {', '.join(self.reasonings)})") from None

    def reasoning_state(self, **values: Any) -> ReasoningState:
        """A request's state: the default LLM, the registered tools, the LLMs a user may
        choose by name, the embeddings. With a ``deadline``, every LLM call of the request
        stops waiting for its turn at it (:class:`~ragloom.llms.deadline.DeadlineLLM`), and
        the usage of those cut short is kept in ``unfinished``, if given."""
        deadline: float | None = values.get("deadline")
        unfinished: UnfinishedCalls | None = values.pop("unfinished", None)
        if deadline is None:
            llm, llm_named = self.llm(), self.selectable_llm
        else:
            llm = DeadlineLLM(llm=self.llm(), deadline=deadline, unfinished=unfinished)

            def llm_named(name: str) -> ChatLLM:
                chosen = self.selectable_llm(name)
                return DeadlineLLM(llm=chosen, deadline=deadline, unfinished=unfinished)

        return ReasoningState(
            llm=llm,
            tools=self.tools,
            llm_named=llm_named,
            get_embeddings=self.embeddings,
            get_focus_embeddings=self.focus_embeddings,
            check_grounding=self.settings.grounding_check,
            reasoning_named=self.reasoning_named,
            **values,
        )

    # -- recovery ----------------------------------------------------------------------------
    def recover_indices(self) -> list[FileOutcome]:
        """Finish, in every index, what processes that stopped left unfinished.

        Slow (files are indexed again) and possibly fatal again (a file that killed the
        process may kill it once more), so it never runs at :meth:`start`: ``ragloom
        serve`` calls it in the background once the server listens. An index whose
        recovery raises is logged and the others go on. Returns every file's outcome.
        """
        outcomes: list[FileOutcome] = []
        for index in self.indices.indices:
            try:
                found = index.recover()
            except Exception:
                logger.exception("recovery of index %r failed", index.name)
                continue
            for outcome in found:
                if outcome.status == "failed":
                    logger.warning("recovery: %s failed: %s", outcome.name, outcome.reason)
                else:
                    logger.info("recovery: %s %s", outcome.name, outcome.status)
            outcomes.extend(found)
        return outcomes

    # -- first run ---------------------------------------------------------------------------
    def seed_first_run(self) -> Iterator[IndexingProgress | FileOutcome]:
        """On an empty app, index ``FIRST_RUN_DOCS`` so a new user can ask at once: the
        files of that folder that a reader reads (its images, say, are left out)."""
        seed = self.settings.first_run_docs
        if not seed or any(index.list_sources() for index in self.indices.indices):
            return
        folder = Path(seed["path"])
        found = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        files = [p for p in found if p.suffix.lower() in self.readers]
        if len(files) < len(found):
            logger.info("first run: %d files of %s have no reader", len(found) - len(files), folder)
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
            "plugins": [plugin.to_dict() for plugin in self.plugins],
        }
