"""An example Ragloom plugin: the ``verified`` mode, the ``date_calc`` tool, ``.rst`` files
and the ``ragloom rst-preview`` command.

Ragloom imports this module through the entry point in pyproject.toml and calls the
hooks below once at startup.
"""

from __future__ import annotations

import click

from ragloom.agents.tools import BaseTool
from ragloom.loaders import FileReader
from ragloom_app.plugins import hookimpl
from ragloom_app.reasoning import BaseReasoning
from ragloom_plugin_example.commands import rst_preview
from ragloom_plugin_example.dates import DateCalcTool
from ragloom_plugin_example.reasoning import VerifiedReasoning
from ragloom_plugin_example.rst import RstReader

__all__ = [
    "DateCalcTool",
    "RstReader",
    "VerifiedReasoning",
    "ragloom_commands",
    "ragloom_file_readers",
    "ragloom_reasonings",
    "ragloom_tools",
]


@hookimpl
def ragloom_reasonings() -> list[type[BaseReasoning]]:
    """The ``verified`` reasoning mode."""
    return [VerifiedReasoning]


@hookimpl
def ragloom_tools() -> list[type[BaseTool]]:
    """The ``date_calc`` tool for the agent modes."""
    return [DateCalcTool]


@hookimpl
def ragloom_file_readers() -> dict[str, FileReader]:
    """reStructuredText files."""
    reader = RstReader()
    return {extension: reader for extension in reader.extensions}


@hookimpl
def ragloom_commands() -> list[click.Command]:
    """``ragloom rst-preview FILE``: what Ragloom indexes of a .rst file."""
    return [rst_preview]
