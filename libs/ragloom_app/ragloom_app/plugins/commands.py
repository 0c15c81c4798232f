"""The plugins' ``ragloom`` subcommands: the slots of stage ``"cli"``, added to the group.

The ``ragloom`` command calls :func:`add_plugin_commands` before it parses its
arguments, so that a plugin's command is listed by ``ragloom --help`` and runs like a
built-in one. Its entries go through a :class:`~ragloom_app.plugins.registry.Registry`
seeded with the group's own commands: a plugin command with a taken name wins, with the
one override warning. A plugin that fails is left out here without a word: the app's
start (``ragloom plugins``) reports it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import click

from ragloom_app.plugins.slots import slots_of

__all__ = ["add_plugin_commands"]

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


def _disabled_plugins(argv: Sequence[str]) -> list[str]:
    """``DISABLED_PLUGINS`` of the settings the command will use ([] if they are wrong:
    the command itself then says what is wrong with them)."""
    from ragloom_app.settings import AppSettings, SettingsError

    try:
        return list(AppSettings.load(_settings_file(argv)).disabled_plugins)
    except SettingsError:
        return [
            name.strip()
            for name in os.environ.get("RAGLOOM_DISABLED_PLUGINS", "").split(",")
            if name.strip()
        ]


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


def add_plugin_commands(group: click.Group, argv: Sequence[str] | None = None) -> list[str]:
    """Add every installed plugin's commands to ``group``; returns the override warnings.

    ``argv`` is the command line about to be parsed (default ``sys.argv[1:]``), read for
    ``--settings`` and so ``DISABLED_PLUGINS``. Nothing is loaded when no slot is of
    stage ``"cli"``.
    """
    slots = slots_of("cli")
    if not slots:
        return []
    import sys

    from ragloom_app.plugins.manager import (
        collect_plugins,
        create_plugin_manager,
        load_entry_point_plugins,
    )
    from ragloom_app.plugins.registry import Registry

    words = list(sys.argv[1:] if argv is None else argv)
    disabled = _disabled_plugins(words)
    manager = create_plugin_manager()
    with _quiet_loading():
        infos = load_entry_point_plugins(manager, disabled)
        loaded = collect_plugins(manager, infos, disabled, stage="cli")
    registry = Registry()
    warnings: list[str] = []
    for slot in slots:
        for name, command in group.commands.items():
            registry.register(slot, name, command, slot.owner)
        for plugin in loaded:
            for name, command in plugin.contributions.entries[slot.kind]:
                warning = registry.register(slot, name, command, f"plugin {plugin.info.name}")
                warnings.extend([warning] if warning else [])
        for name, command in registry.table(slot.kind).items():
            group.add_command(command, name)
    return warnings
