"""The plugin slots, described once: per hook, what it registers and how its value is read.

:data:`SLOTS` is the one table. Everything else derives from it: what a plugin record
lists (:data:`KINDS`), how a hook's value is checked and becomes ``(id, value)``
entries, who owns Ragloom's own entries in an override warning, and where the hook is
called (``stage``: at app start, or by the ``ragloom`` command). Adding a hook means its
spec in :mod:`ragloom_app.plugins.hookspecs`, its row here and its docs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ragloom_app.plugins.rules import (
    MAX_HOOK_ENTRIES,
    MAX_ID_CHARS,
    RuleError,
    check_reasoning_info,
    check_setting_specs,
    shown,
)

# The classes a value is checked against are imported when a hook's value is read, not
# here: the ``ragloom`` command reads this table before it knows whether it starts the app.

__all__ = ["KINDS", "SLOTS", "Entries", "PluginError", "Slot", "slot_for_hook", "slots_of"]

Entries = list[tuple[str, Any]]
"""What a hook registers: ``(id, value)`` pairs, in the hook's order."""


class PluginError(Exception):
    """A plugin's hook returned something Ragloom cannot register."""


@dataclass(frozen=True)
class Slot:
    """One extension point.

    ``hook`` is the hook's name, ``kind`` what a plugin record lists its ids under,
    ``label`` how an override warning names one entry ("reasoning 'fullqa'"), ``owner``
    who registers Ragloom's own entries of the kind (a setting, or "the built-in tools"),
    ``entries`` turns the hook's value (and the arguments it was called with) into
    ``(id, value)`` pairs, raising :class:`PluginError` for anything it cannot register,
    and ``stage`` says where the hook is called: at app start (``"app"``), or by the
    ``ragloom`` command before it runs one (``"cli"``: the entries are commands of the
    ``ragloom`` click group). ``arguments`` makes the hook's own arguments afresh for
    each implementation (the empty click group a plugin adds its commands to, say),
    besides those of the stage (``app``).
    """

    hook: str
    kind: str
    label: str
    owner: str
    entries: Callable[[Any, Mapping[str, Any]], Entries]
    stage: Literal["app", "cli"] = "app"
    arguments: Callable[[], dict[str, Any]] | None = None

    def call_arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments an implementation of this hook may name: ``given`` and the
        slot's own, made for this one call."""
        return {**given, **(self.arguments() if self.arguments else {})}


def _listed(value: Any, hook: str, what: str) -> list[Any]:
    """A hook's list (or tuple), bounded: an iterator could be endless and a set would
    register in another order each run."""

    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise PluginError(f"{hook} must return a list of {what}, got {type(value).__name__}")
    if len(value) > MAX_HOOK_ENTRIES:
        raise PluginError(
            f"{hook} returned {len(value)} entries; at most {MAX_HOOK_ENTRIES} (MAX_HOOK_ENTRIES)"
        )
    return list(value)


def _classes(value: Any, base: type, hook: str) -> list[Any]:
    items = _listed(value, hook, f"{base.__name__} subclasses")
    for item in items:
        if not (isinstance(item, type) and issubclass(item, base)):
            raise PluginError(f"{hook} returned {item!r}, not a {base.__name__} subclass")
    return items


def _mapping(value: Any, hook: str) -> list[tuple[Any, Any]]:
    """A hook's dict as ``(key, value)`` pairs, bounded as :func:`_listed`."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise PluginError(f"{hook} must return a dict, got {type(value).__name__}")
    return _listed(list(value.items()), hook, "entries")


def _id(key: Any, hook: str, what: str) -> str:
    """``key`` if it is an id Ragloom can list and look up: non-empty text, bounded."""

    if not isinstance(key, str) or not key or len(key) > MAX_ID_CHARS:
        raise PluginError(
            f"{hook}: {what} must be text of 1 to {MAX_ID_CHARS} characters, got {shown(key)}"
        )
    return key


def _check_settings(cls: type, method: str, *arguments: Any) -> None:
    """Call a settings method of ``cls`` as the UI will, and check what it returns: a
    form that cannot be drawn would stop the web UI from being built for everyone."""

    owner = f"{cls.__qualname__}.{method}()"
    try:
        specs = getattr(cls, method)(*arguments)
        check_setting_specs(specs, owner)
    except RuleError as exc:
        raise PluginError(str(exc)) from None
    except (Exception, SystemExit) as exc:  # a plugin's bug, named: its hook returned fine
        raise PluginError(f"{owner} raised {type(exc).__name__}: {exc}") from None


def _reasonings(value: Any, given: Mapping[str, Any]) -> Entries:
    from ragloom_app.reasoning.base import BaseReasoning

    entries: Entries = []
    for cls in _classes(value, BaseReasoning, "ragloom_reasonings"):
        info = cls.get_info()
        try:
            check_reasoning_info(info, cls.__qualname__)
        except RuleError as exc:
            raise PluginError(str(exc)) from None
        _check_settings(cls, "get_user_settings")
        entries.append((info.id, cls))
    return entries


def _index_types(value: Any, given: Mapping[str, Any]) -> Entries:
    from ragloom.loaders import default_readers
    from ragloom_app.index.base import BaseIndex

    hook = "ragloom_index_types"
    if isinstance(value, Mapping):
        # {type id: class}: the id INDEX_TYPES names, which may be a shorter import path.
        entries = _mapping(value, hook)
        for type_id, cls in entries:
            _id(type_id, hook, "a type id")
            _classes([cls], BaseIndex, hook)
    else:
        entries = [
            (_id(f"{c.__module__}.{c.__qualname__}", hook, "a type id"), c)
            for c in _classes(value, BaseIndex, hook)
        ]
    readers = default_readers()
    for _, cls in entries:
        # The forms that create an index (admin) and search it (user) are drawn from these.
        _check_settings(cls, "get_admin_settings")
        _check_settings(cls, "admin_settings_for", readers)
        _check_settings(cls, "get_user_settings")
    return entries


def _tools(value: Any, given: Mapping[str, Any]) -> Entries:
    from ragloom.agents.tools import BaseTool, check_runnable
    from ragloom.agents.tools.registry import is_tool_name

    entries: Entries = []
    for tool in _classes(value, BaseTool, "ragloom_tools"):
        # The agents' registry refuses any other name, and it is filled after the plugins'
        # errors are caught: a name it refuses would stop the app from starting.
        if not is_tool_name(getattr(tool, "name", None)):
            raise PluginError(
                f"{tool.__qualname__}.name must be a lower-case identifier (agents write it "
                f"in their plans), not {shown(getattr(tool, 'name', None))}"
            )
        try:
            check_runnable(tool)  # e.g. a sandboxed tool that needs the request
        except TypeError as exc:
            raise PluginError(str(exc)) from None
        entries.append((tool.name, tool))
    return entries


def _readers(value: Any, given: Mapping[str, Any]) -> Entries:
    from ragloom.loaders import FileReader

    hook = "ragloom_file_readers"
    entries: Entries = []
    for extension, reader in _mapping(value, hook):
        if not (isinstance(extension, str) and re.fullmatch(r"\.[a-z0-9_]{1,30}", extension)):
            raise PluginError(f"{hook}: {extension!r} is not a lower-case '.ext'")
        if not isinstance(reader, FileReader) or isinstance(reader, type):
            raise PluginError(f"{hook}[{extension!r}] is not a FileReader object")
        entries.append((extension, reader))
    return entries


def _model_specs(hook: str) -> Callable[[Any, Mapping[str, Any]], Entries]:
    def entries(value: Any, given: Mapping[str, Any]) -> Entries:
        found: Entries = []
        for name, spec in _mapping(value, hook):
            _id(name, hook, "a name")
            if isinstance(spec, type):
                spec = {"class": spec}
            if not isinstance(spec, Mapping) or "class" not in spec:
                raise PluginError(f"{hook}[{name!r}] must be a class or a dict with a 'class' key")
            found.append((name, dict(spec)))
        return found

    return entries


def _commands(value: Any, given: Mapping[str, Any]) -> Entries:
    import click

    hook = "ragloom_commands"
    commands = dict(given["cli"].commands)  # those the plugin added with @cli.command()
    for command in _listed(value, hook, "click commands"):
        if not isinstance(command, click.Command) or not command.name:
            raise PluginError(f"{hook} returned {command!r}, not a named click command")
        commands[command.name] = command
    for name in _listed(list(commands), hook, "click commands"):
        _id(name, hook, "a command name")
    return list(commands.items())


def _empty_group() -> dict[str, Any]:
    import click

    return {"cli": click.Group("ragloom")}


SLOTS: tuple[Slot, ...] = (
    Slot("ragloom_reasonings", "reasonings", "reasoning", "REASONINGS", _reasonings),
    Slot("ragloom_index_types", "index_types", "index type", "INDEX_TYPES", _index_types),
    Slot("ragloom_tools", "tools", "tool", "the built-in tools", _tools),
    Slot("ragloom_file_readers", "readers", "reader", "the built-in readers", _readers),
    Slot("ragloom_llms", "llms", "llm", "LLMS", _model_specs("ragloom_llms")),
    Slot(
        "ragloom_embeddings",
        "embeddings",
        "embedding",
        "EMBEDDINGS",
        _model_specs("ragloom_embeddings"),
    ),
    Slot(
        "ragloom_commands",
        "commands",
        "command",
        "the built-in commands",
        _commands,
        stage="cli",
        arguments=_empty_group,
    ),
)
"""Every hook a plugin may implement, in the order a plugin's entries are registered."""


def slots_of(stage: str) -> tuple[Slot, ...]:
    """The slots whose hooks are called at ``stage`` (``"app"`` or ``"cli"``)."""
    return tuple(slot for slot in SLOTS if slot.stage == stage)


KINDS: tuple[str, ...] = tuple(slot.kind for slot in slots_of("app"))
"""What a plugin record (``PluginInfo.registered``) lists: the kinds of the app's slots."""

_BY_HOOK = {slot.hook: slot for slot in SLOTS}


def slot_for_hook(hook: str) -> Slot | None:
    """The slot of hook ``hook``, or None for a hook Ragloom does not have."""
    return _BY_HOOK.get(hook)
