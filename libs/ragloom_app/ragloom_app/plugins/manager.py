"""Find, load and ask the plugins: pluggy's PluginManager with failures kept per plugin.

Plugins come from the entry-point group ``ragloom`` of installed distributions (what
pluggy's ``load_setuptools_entrypoints`` reads), or are registered directly with
``pm.register(obj, name=...)``. A plugin that fails to import, declares an unknown hook,
raises in a hook or returns something of the wrong kind is recorded with its error in
its :class:`PluginInfo` and contributes nothing: the app starts without it.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ragloom.agents.tools import BaseTool, check_runnable
from ragloom.loaders import FileReader
from ragloom_app.index.base import BaseIndex
from ragloom_app.plugins import hookspecs
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo

__all__ = [
    "ENTRY_POINT_GROUP",
    "KINDS",
    "Contributions",
    "LoadedPlugin",
    "PluginError",
    "PluginInfo",
    "check_hooks",
    "collect_plugins",
    "create_plugin_manager",
    "load_entry_point_plugins",
    "normalize_name",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ragloom"
"""The entry-point group a plugin's distribution declares (``[project.entry-points.ragloom]``)."""

KINDS = ("reasonings", "index_types", "tools", "readers", "llms", "embeddings")
"""What a plugin can register, as ``PluginInfo.registered`` names it."""


class PluginError(Exception):
    """A plugin's hook returned something Ragloom cannot register."""


def normalize_name(name: str) -> str:
    """A plugin or distribution name compared loosely (PEP 503): ``Foo_Bar`` → ``foo-bar``."""
    return re.sub(r"[-_.]+", "-", name).lower().strip()


@dataclass
class PluginInfo:
    """One plugin as ``ragloom plugins`` and the UI list it.

    ``name`` is the distribution's name (the registered name for a plugin registered
    directly), ``entry_point`` the ``name = module`` line that loaded it, ``registered``
    the ids it added by kind (see :data:`KINDS`), ``error`` why it was left out, and
    ``warnings`` what it replaced that was registered before it under the same id.
    """

    name: str
    version: str | None = None
    entry_point: str | None = None
    registered: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    error: str | None = None
    disabled: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``ragloom plugins --json``."""
        return {
            "name": self.name,
            "version": self.version,
            "entry_point": self.entry_point,
            "registered": {kind: list(self.registered.get(kind, [])) for kind in KINDS},
            "error": self.error,
            "disabled": self.disabled,
            "warnings": list(self.warnings),
        }


@dataclass
class Contributions:
    """What one plugin adds, checked and ready to register."""

    reasonings: list[type[BaseReasoning]] = field(default_factory=list)
    index_types: dict[str, type[BaseIndex]] = field(default_factory=dict)
    tools: list[type[BaseTool]] = field(default_factory=list)
    readers: dict[str, FileReader] = field(default_factory=dict)
    llms: dict[str, dict[str, Any]] = field(default_factory=dict)
    embeddings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> dict[str, list[str]]:
        """The ids of everything here, by kind."""
        return {
            "reasonings": [cls.get_info().id for cls in self.reasonings],
            "index_types": list(self.index_types),
            "tools": [tool.name for tool in self.tools],
            "readers": list(self.readers),
            "llms": list(self.llms),
            "embeddings": list(self.embeddings),
        }


@dataclass
class LoadedPlugin:
    """A plugin's record and, unless it failed or is disabled, what it contributes."""

    info: PluginInfo
    contributions: Contributions


def create_plugin_manager() -> pluggy.PluginManager:
    """A PluginManager of project ``ragloom`` that knows Ragloom's hooks, with no plugin."""
    manager = pluggy.PluginManager("ragloom")
    manager.add_hookspecs(hookspecs)
    return manager


def _dist_name(point: importlib.metadata.EntryPoint) -> str:
    """The name of the distribution that declares ``point`` (its entry-point name if none)."""
    return (point.dist.metadata["Name"] if point.dist is not None else None) or point.name


def _is_disabled(names: Iterable[str | None], disabled: Collection[str]) -> bool:
    wanted = {normalize_name(d) for d in disabled}
    return any(name is not None and normalize_name(name) in wanted for name in names)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def check_hooks(manager: pluggy.PluginManager, plugin: object) -> None:
    """Refuse a plugin that implements a hook Ragloom does not have (a typo, usually)."""
    unknown = sorted(c.name for c in manager.get_hookcallers(plugin) or [] if not c.has_spec())
    if unknown:
        known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("ragloom_")))
        raise PluginError(f"unknown hook {', '.join(unknown)} (Ragloom's hooks: {known})")


def load_entry_point_plugins(
    manager: pluggy.PluginManager, disabled: Collection[str] = ()
) -> list[PluginInfo]:
    """Register the plugins of every installed distribution's ``ragloom`` entry points.

    Like pluggy's ``load_setuptools_entrypoints``, but one entry point at a time, in order
    of distribution name, so that one that fails is recorded (not raised) and the others
    still load. A plugin named in ``disabled`` (by distribution or entry-point name) is not
    even imported. Returns a record per entry point; the loaded ones carry no error yet.
    """
    infos: list[PluginInfo] = []
    # entry_points() lists each distribution once, the one found first on sys.path.
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for point in sorted(points, key=lambda e: (normalize_name(_dist_name(e)), e.name)):
        dist_name = _dist_name(point)
        version = point.dist.version if point.dist is not None else None
        info = PluginInfo(dist_name, version, f"{point.name} = {point.value}")
        infos.append(info)
        if _is_disabled((dist_name, point.name), disabled):
            info.disabled = True
            logger.info("plugin %s is disabled (DISABLED_PLUGINS)", dist_name)
            continue
        if manager.has_plugin(point.name) or manager.is_blocked(point.name):
            info.error = f"another plugin is registered as {point.name!r} already"
            logger.warning("plugin %s left out: %s", dist_name, info.error)
            continue
        try:
            manager.register(point.load(), name=point.name)
        except Exception as exc:  # any import-time failure of third-party code
            info.error = _error_text(exc)
            logger.error("plugin %s %s failed to load: %s", dist_name, version, info.error)
    return infos


def _classes(value: Any, base: type, hook: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise PluginError(f"{hook} must return a list of {base.__name__} subclasses")
    items = list(value)
    for item in items:
        if not (isinstance(item, type) and issubclass(item, base)):
            raise PluginError(f"{hook} returned {item!r}, not a {base.__name__} subclass")
    return items


def _mapping(value: Any, hook: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PluginError(f"{hook} must return a dict, got {type(value).__name__}")
    return value


def _model_specs(value: Any, hook: str) -> dict[str, dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for name, spec in _mapping(value, hook).items():
        if not isinstance(name, str) or not name:
            raise PluginError(f"{hook}: names must be non-empty strings, got {name!r}")
        if isinstance(spec, type):
            spec = {"class": spec}
        if not isinstance(spec, Mapping) or "class" not in spec:
            raise PluginError(f"{hook}[{name!r}] must be a class or a dict with a 'class' key")
        specs[name] = dict(spec)
    return specs


def _add(found: Contributions, hook: str, value: Any) -> None:
    """Check one hook's return value and add it to ``found``; raises ``PluginError``."""
    if hook == "ragloom_reasonings":
        for cls in _classes(value, BaseReasoning, hook):
            info = cls.get_info()
            if not isinstance(info, ReasoningInfo) or not info.id:
                raise PluginError(f"{cls.__qualname__}.get_info() must return a ReasoningInfo")
            found.reasonings.append(cls)
    elif hook == "ragloom_index_types":
        for cls in _classes(value, BaseIndex, hook):
            found.index_types[f"{cls.__module__}.{cls.__qualname__}"] = cls
    elif hook == "ragloom_tools":
        for tool in _classes(value, BaseTool, hook):
            if not isinstance(getattr(tool, "name", None), str) or not tool.name.isidentifier():
                raise PluginError(f"{tool.__qualname__}.name must be an identifier")
            try:
                check_runnable(tool)  # e.g. a sandboxed tool that needs the request
            except TypeError as exc:
                raise PluginError(str(exc)) from None
            found.tools.append(tool)
    elif hook == "ragloom_file_readers":
        for extension, reader in _mapping(value, hook).items():
            if not (isinstance(extension, str) and re.fullmatch(r"\.[a-z0-9_]+", extension)):
                raise PluginError(f"{hook}: {extension!r} is not a lower-case '.ext'")
            if not isinstance(reader, FileReader) or isinstance(reader, type):
                raise PluginError(f"{hook}[{extension!r}] is not a FileReader object")
            found.readers[extension] = reader
    elif hook == "ragloom_llms":
        found.llms.update(_model_specs(value, hook))
    elif hook == "ragloom_embeddings":
        found.embeddings.update(_model_specs(value, hook))


def _contributions(manager: pluggy.PluginManager, plugin: object) -> Contributions:
    """Call each hook the plugin implements (its own implementation alone) and check it."""
    found = Contributions()
    for caller in manager.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin or impl.hookwrapper or impl.wrapper:
                continue
            try:
                value = impl.function()
                _add(found, caller.name, value)
            except PluginError:
                raise
            except Exception as exc:  # a plugin's bug must not stop the app
                raise PluginError(f"{caller.name} raised {_error_text(exc)}") from exc
    return found


def _ask(manager: pluggy.PluginManager, plugin: object, info: PluginInfo) -> LoadedPlugin:
    try:
        check_hooks(manager, plugin)
        found = _contributions(manager, plugin)
    except PluginError as exc:
        info.error = str(exc)
        logger.error("plugin %s left out: %s", info.name, info.error)
        return LoadedPlugin(info, Contributions())
    info.registered = found.summary()
    return LoadedPlugin(info, found)


def collect_plugins(
    manager: pluggy.PluginManager,
    infos: Iterable[PluginInfo] = (),
    disabled: Collection[str] = (),
) -> list[LoadedPlugin]:
    """Ask every registered plugin what it adds: first those of ``infos``, in their order.

    ``infos`` are the records of :func:`load_entry_point_plugins` (failed and disabled
    ones stay listed); a plugin registered directly gets a record of its own, named as
    registered. A plugin whose hook raises or returns the wrong kind of thing gets the
    error in its record and contributes nothing at all.
    """
    plugins = dict(manager.list_name_plugin())
    loaded: list[LoadedPlugin] = []
    for info in infos:
        name = (info.entry_point or "").split(" = ")[0]
        plugin = plugins.pop(name, None) if info.error is None and not info.disabled else None
        if plugin is None:
            loaded.append(LoadedPlugin(info, Contributions()))
        elif _is_disabled((name, info.name), disabled):
            info.disabled = True
            loaded.append(LoadedPlugin(info, Contributions()))
        else:
            loaded.append(_ask(manager, plugin, info))
    for name, plugin in plugins.items():
        if plugin is None:  # a blocked name
            continue
        info = PluginInfo(name, getattr(plugin, "__version__", None) or None)
        if _is_disabled((name,), disabled):
            info.disabled = True
            loaded.append(LoadedPlugin(info, Contributions()))
        else:
            loaded.append(_ask(manager, plugin, info))
    return loaded
