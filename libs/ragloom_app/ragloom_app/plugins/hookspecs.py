"""The hooks a Ragloom plugin may implement: one per extension point.

Each hook returns what the plugin adds; a plugin implements only the hooks it needs,
with ``@hookimpl`` (``from ragloom_app.plugins import hookimpl``). Ragloom calls an
implementation with the arguments it names, as pluggy does: ``app`` (the
:class:`~ragloom_app.app.BaseApp`, e.g. for ``app.plugin_settings(name)``) or none.
Each hook's row in :data:`ragloom_app.plugins.slots.SLOTS` says how its value is
registered. The reference, with what each returned object must satisfy, is in
docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from ragloom.agents.tools import BaseTool
    from ragloom.loaders import FileReader
    from ragloom_app.app import BaseApp
    from ragloom_app.index.base import BaseIndex
    from ragloom_app.reasoning.base import BaseReasoning

# The hooks are the ragloom_* functions below (no list to keep in step with them).
__all__ = ["hookspec"]

hookspec = pluggy.HookspecMarker("ragloom")


@hookspec
def ragloom_reasonings(app: BaseApp) -> Sequence[type[BaseReasoning]]:
    """Reasoning classes (BaseReasoning subclasses) to add as modes, under their info id."""


@hookspec
def ragloom_index_types(
    app: BaseApp,
) -> Sequence[type[BaseIndex]] | dict[str, type[BaseIndex]]:
    """Index types (BaseIndex subclasses), registered under their dotted path (or a dict
    of type id to class, the ids ``INDEX_TYPES`` names)."""


@hookspec
def ragloom_tools(app: BaseApp) -> Sequence[type[BaseTool]]:
    """Tool classes (BaseTool subclasses) for the agent modes, under their ``name``."""


@hookspec
def ragloom_file_readers(app: BaseApp) -> dict[str, FileReader]:
    """File readers by lower-case extension with its dot: ``{".rst": RstReader()}``."""


@hookspec
def ragloom_llms(app: BaseApp) -> dict[str, Mapping[str, Any] | type]:
    """LLMs by name, as an LLMS spec (``{"class": ..., **params}``) or a class."""


@hookspec
def ragloom_embeddings(app: BaseApp) -> dict[str, Mapping[str, Any] | type]:
    """Embedding models by name, as an EMBEDDINGS spec or a class."""


@hookspec
def ragloom_commands(cli: click.Group) -> Sequence[click.Command] | None:
    """``ragloom`` subcommands: add them to ``cli`` with ``@cli.command()`` (or return
    click commands), registered under their names."""
