"""The plugins' ``ragloom`` subcommands: the slots of stage ``"cli"``, added to the group.

The ``ragloom`` command calls :func:`add_plugin_commands` before it parses its
arguments, so that a plugin's command is listed by ``ragloom --help`` and runs like a
built-in one. Its entries go through a :class:`~ragloom_app.plugins.registry.Registry`
seeded with the group's own commands: a plugin command with a taken name wins, with the
one override warning. A plugin that fails, in this hook or in those the app's start
calls, adds no command; the errors and warnings reach its record through
:func:`note_command_warnings` (``ragloom plugins``, the Plugins tab).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from ragloom_app.plugins.slots import slots_of

if TYPE_CHECKING:
    import pluggy

    from ragloom_app.plugins.manager import PluginInfo
    from ragloom_app.settings import AppSettings

__all__ = ["add_plugin_commands", "note_command_warnings"]

_MANAGER_LOGGER = "ragloom_app.plugins.manager"


def _settings_file(argv: Sequence[str]) -> str | None:
    """The ``--settings`` of ``ragloom --settings FILE ...``, read before click parses."""
    for position, word in enumerate(argv):
        if word == "--settings" and position + 1 < len(argv):
            return argv[position + 1]
        if word.startswith("--settings="):
            return word.partition("=")[2]
        if not word.startswith("-"):
            return None  # the command's name: its options are its own
    return None


def _settings(argv: Sequence[str]) -> tuple[AppSettings, list[str]]:
    """The settings the command will use and their ``DISABLED_PLUGINS`` (the defaults and
    ``RAGLOOM_DISABLED_PLUGINS`` if they are wrong: the command then says what is wrong)."""
    from ragloom_app.settings import AppSettings, SettingsError

    try:
        settings = AppSettings.load(_settings_file(argv))
    except SettingsError:
        names = os.environ.get("RAGLOOM_DISABLED_PLUGINS", "").split(",")
        return AppSettings(), [name.strip() for name in names if name.strip()]
    return settings, list(settings.disabled_plugins)


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """No load errors logged here: the app logs them once, when a command starts it."""
    logger = logging.getLogger(_MANAGER_LOGGER)
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def _leave_out_failing(
    manager: pluggy.PluginManager, infos: list[PluginInfo], settings: AppSettings
) -> None:
    """Ask the plugins that add commands for what they add to the app, as its start will:
    one that fails there gets its error in ``infos``, so its commands are left out too
    (a plugin is left out whole). Nothing is asked when no plugin adds a command."""
    from ragloom_app.app import BaseApp
    from ragloom_app.plugins.manager import collect_plugins

    if not manager.hook.ragloom_commands.get_hookimpls():
        return
    # Not started: the hooks get the app as at start, before it has finished starting.
    collect_plugins(manager, infos, settings.disabled_plugins, {"app": BaseApp(settings)})


def add_plugin_commands(
    group: click.Group, argv: Sequence[str] | None = None
) -> dict[str, list[str]]:
    """Add every installed plugin's commands to ``group``; returns, by plugin name, what
    to add to its record's warnings: the commands it replaced, and why its commands are
    left out if its ``ragloom_commands`` hook failed.

    ``argv`` is the command line about to be parsed (default ``sys.argv[1:]``), read for
    ``--settings`` and so ``DISABLED_PLUGINS``. A plugin whose other hooks fail adds no
    command. Nothing is loaded when no slot is of stage ``"cli"``.
    """
    slots = slots_of("cli")
    if not slots:
        return {}
    import sys

    from ragloom_app.plugins.manager import (
        collect_plugins,
        create_plugin_manager,
        load_entry_point_plugins,
    )
    from ragloom_app.plugins.registry import Registry

    words = list(sys.argv[1:] if argv is None else argv)
    settings, disabled = _settings(words)
    manager = create_plugin_manager()
    with _quiet_loading():
        infos = load_entry_point_plugins(manager, disabled)
        not_loaded = {info.name for info in infos if info.error is not None}
        _leave_out_failing(manager, infos, settings)
        failed = {info.name for info in infos if info.error is not None}
        loaded = collect_plugins(manager, infos, disabled, stage="cli")
    notes: dict[str, list[str]] = {
        plugin.info.name: [f"its commands are left out: {plugin.info.error}"]
        for plugin in loaded
        if plugin.info.error is not None and plugin.info.name not in failed
    }
    # Left out by their other hooks here (where the app is not started): said on their
    # record, or a plugin that works once the app starts would lose its commands unseen.
    with_commands = {impl.plugin_name for impl in manager.hook.ragloom_commands.get_hookimpls()}
    for info in infos:
        if info.name in (failed - not_loaded) and info.name in with_commands:
            notes.setdefault(info.name, []).append(
                f"its commands are left out: its hooks failed as the command line was read "
                f"({info.error})"
            )
    registry = Registry()
    for slot in slots:
        for name, command in group.commands.items():
            registry.register(slot, name, command, slot.owner)
        for plugin in loaded:
            for name, command in plugin.contributions.entries[slot.kind]:
                warning = registry.register(slot, name, command, f"plugin {plugin.info.name}")
                if warning:
                    notes.setdefault(plugin.info.name, []).append(warning)
        for name, command in registry.table(slot.kind).items():
            group.add_command(command, name)
    return notes


def note_command_warnings(infos: Sequence[PluginInfo], notes: Mapping[str, list[str]]) -> None:
    """Add what :func:`add_plugin_commands` returned to the plugins' records (the app's
    start knows nothing of commands), so ``ragloom plugins`` and the Plugins tab list it."""
    for info in infos:
        for note in notes.get(info.name, []):
            if note not in info.warnings:
                info.warnings.append(note)
