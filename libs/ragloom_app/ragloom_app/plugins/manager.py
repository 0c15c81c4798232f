"""Find, load and ask the plugins: pluggy's PluginManager with failures kept per plugin.

Plugins come from the entry-point group ``ragloom`` of installed distributions (what
pluggy's ``load_setuptools_entrypoints`` reads), or are registered directly with
``pm.register(obj, name=...)``. A plugin that fails to import, declares an unknown hook,
raises in a hook or returns something of the wrong kind is recorded with its error in
its :class:`PluginInfo` and contributes nothing: the app starts without it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ragloom_app.plugins import hookspecs, normalize_name
from ragloom_app.plugins.slots import KINDS, SLOTS, Entries, PluginError, slots_of
from ragloom_app.settings import SettingsError

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "KINDS",
    "Contributions",
    "LoadedPlugin",
    "PluginError",
    "PluginInfo",
    "check_hooks",
    "collect_default_plugins",
    "collect_plugins",
    "create_plugin_manager",
    "load_entry_point_plugins",
    "normalize_name",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ragloom"
"""The entry-point group a plugin's distribution declares (``[project.entry-points.ragloom]``)."""

DEFAULT_PLUGINS = ("ragloom_app.plugins.builtin",)
"""Ragloom's own plugin modules: they register what the settings list, through the same
hooks as any plugin, before the installed plugins."""


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
    builtin: bool = False

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


class Contributions:
    """What one plugin adds, checked and ready to register: ``(id, value)`` entries by kind.

    ``contributions.reasonings`` (any kind of :data:`KINDS` as an attribute) is the list
    of that kind's values.
    """

    def __init__(self) -> None:
        self.entries: dict[str, Entries] = {slot.kind: [] for slot in SLOTS}

    def add(self, kind: str, entries: Entries) -> None:
        """Add entries of ``kind`` (a later one with the same id replaces an earlier one)."""
        self.entries[kind].extend(entries)

    def values(self, kind: str) -> list[Any]:
        """The values of ``kind``, in order."""
        return [value for _, value in self.entries[kind]]

    def summary(self) -> dict[str, list[str]]:
        """The ids of everything here, by kind (each id once)."""
        return {kind: list(dict.fromkeys(key for key, _ in self.entries[kind])) for kind in KINDS}

    def __getattr__(self, kind: str) -> list[Any]:
        if kind in KINDS:
            return self.values(kind)
        raise AttributeError(kind)


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
    """Refuse a plugin that implements a hook Ragloom does not have (a typo, usually).

    A hook marked ``@hookimpl(optionalhook=True)`` is one of a newer Ragloom, say: it is
    not called, and the plugin loads with its other hooks.
    """
    unknown = sorted(
        caller.name
        for caller in manager.get_hookcallers(plugin) or []
        if not caller.has_spec()
        and not all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin)
    )
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
        if point.name in DEFAULT_PLUGINS:
            # Registered first under that name, it would be asked instead of Ragloom's own.
            info.error = f"the entry-point name {point.name!r} is Ragloom's own plugin's"
            logger.error("plugin %s left out: %s", dist_name, info.error)
            continue
        if manager.has_plugin(point.name) or manager.is_blocked(point.name):
            info.error = f"another plugin is registered as {point.name!r} already"
            logger.warning("plugin %s left out: %s", dist_name, info.error)
            continue
        # SystemExit too (a module that calls sys.exit() when imported): it would end
        # every ragloom command. KeyboardInterrupt is the user's, and goes through.
        try:
            manager.register(point.load(), name=point.name)
        except (Exception, SystemExit) as exc:  # any import-time failure of third-party code
            info.error = _error_text(exc)
            logger.error("plugin %s %s failed to load: %s", dist_name, version, info.error)
    return infos


def _wanted_arguments(impl: pluggy.HookImpl, given: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments ``impl`` names, the pluggy way: a plugin written for a Ragloom whose
    hook had fewer arguments keeps working when the spec gains one."""
    return {name: given.get(name) for name in impl.argnames}


def _contributions(
    manager: pluggy.PluginManager,
    plugin: object,
    given: Mapping[str, Any],
    stage: str = "app",
    strict: bool = False,
) -> Contributions:
    """Call each hook of ``stage`` the plugin implements (its own implementation alone),
    with the arguments it names among ``given``, and check what it returns.

    Raises :class:`PluginError`; ``strict`` (Ragloom's own plugins, which read the
    settings) raises the hook's own error, and a value it cannot register as the
    :class:`SettingsError` of the slot's setting.
    """
    found = Contributions()
    for slot in slots_of(stage):
        caller = getattr(manager.hook, slot.hook, None)
        if caller is None:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin or impl.hookwrapper or impl.wrapper:
                continue
            arguments = slot.call_arguments(given)
            if strict:
                value = impl.function(**_wanted_arguments(impl, arguments))
                try:
                    found.add(slot.kind, slot.entries(value, arguments))
                except PluginError as exc:
                    raise SettingsError(f"{slot.owner}: {exc}") from None
                continue
            try:
                value = impl.function(**_wanted_arguments(impl, arguments))
                found.add(slot.kind, slot.entries(value, arguments))
            except PluginError:
                raise
            except (Exception, SystemExit) as exc:  # a plugin's bug must not stop the app
                raise PluginError(f"{slot.hook} raised {_error_text(exc)}") from exc
    return found


def _ask(
    manager: pluggy.PluginManager,
    plugin: object,
    info: PluginInfo,
    given: Mapping[str, Any],
    stage: str,
) -> LoadedPlugin:
    try:
        check_hooks(manager, plugin)
        found = _contributions(manager, plugin, given, stage)
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
    given: Mapping[str, Any] | None = None,
    stage: str = "app",
) -> list[LoadedPlugin]:
    """Ask every registered plugin what it adds: first those of ``infos``, in their order.

    ``infos`` are the records of :func:`load_entry_point_plugins` (failed and disabled
    ones stay listed); a plugin registered directly gets a record of its own, named as
    registered. A plugin whose hook raises or returns the wrong kind of thing gets the
    error in its record and contributes nothing at all. Only the hooks of ``stage`` are
    called (see :class:`~ragloom_app.plugins.slots.Slot`); ``given`` are the arguments
    they may name (``app``). Ragloom's own plugins (:data:`DEFAULT_PLUGINS`) are not
    among them: :func:`collect_default_plugins` asks those.
    """
    given = dict(given or {})
    plugins = {
        name: plugin for name, plugin in manager.list_name_plugin() if name not in DEFAULT_PLUGINS
    }
    loaded: list[LoadedPlugin] = []
    for info in infos:
        name = (info.entry_point or "").split(" = ")[0]
        registered = plugins.pop(name, None)  # not asked below as one registered directly
        plugin = registered if info.error is None and not info.disabled else None
        if plugin is None:
            loaded.append(LoadedPlugin(info, Contributions()))
        elif _is_disabled((name, info.name), disabled):
            info.disabled = True
            loaded.append(LoadedPlugin(info, Contributions()))
        else:
            loaded.append(_ask(manager, plugin, info, given, stage))
    for name, plugin in plugins.items():
        if plugin is None:  # a blocked name
            continue
        info = PluginInfo(name, getattr(plugin, "__version__", None) or None)
        if _is_disabled((name,), disabled):
            info.disabled = True
            loaded.append(LoadedPlugin(info, Contributions()))
        else:
            loaded.append(_ask(manager, plugin, info, given, stage))
    return loaded


def collect_default_plugins(
    manager: pluggy.PluginManager, given: Mapping[str, Any], name: str, version: str | None
) -> list[LoadedPlugin]:
    """Register (once) and ask Ragloom's own plugins, listed as ``name`` ``version``.

    They are asked like any plugin, except that what goes wrong in one is the settings'
    error (a wrong dotted path in ``REASONINGS``, say): it is raised, and the app does
    not start, where another plugin would be left out.
    """
    loaded: list[LoadedPlugin] = []
    for module_name in DEFAULT_PLUGINS:
        plugin = importlib.import_module(module_name)
        registered = manager.get_plugin(module_name)
        if registered is not None and registered is not plugin:
            # Whatever else took the name is not asked: the built-ins are the module's.
            logger.error(
                "%r is registered as %s, Ragloom's own plugin: left out", registered, module_name
            )
            manager.unregister(name=module_name)
            registered = None
        if registered is None:
            manager.register(plugin, name=module_name)
        found = _contributions(manager, plugin, given, strict=True)
        info = PluginInfo(name, version, builtin=True)
        info.registered = found.summary()
        loaded.append(LoadedPlugin(info, found))
    return loaded
