"""The hooks a Ragloom plugin may implement: one per extension point.

Each hook takes no argument and returns what the plugin adds; a plugin implements only
the hooks it needs, with ``@hookimpl`` (``from ragloom_app.plugins import hookimpl``).
The reference, with what each returned object must satisfy, is in docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ragloom.agents.tools import BaseTool
    from ragloom.loaders import FileReader
    from ragloom_app.index.base import BaseIndex
    from ragloom_app.reasoning.base import BaseReasoning

__all__ = [
    "hookspec",
    "ragloom_embeddings",
    "ragloom_file_readers",
    "ragloom_index_types",
    "ragloom_llms",
    "ragloom_reasonings",
    "ragloom_tools",
]

hookspec = pluggy.HookspecMarker("ragloom")


@hookspec
def ragloom_reasonings() -> Iterable[type[BaseReasoning]]:
    """Reasoning classes (BaseReasoning subclasses) to add as modes, under their info id."""


@hookspec
def ragloom_index_types() -> Iterable[type[BaseIndex]]:
    """Index types (BaseIndex subclasses), registered under their dotted path."""


@hookspec
def ragloom_tools() -> Iterable[type[BaseTool]]:
    """Tool classes (BaseTool subclasses) for the agent modes, under their ``name``."""


@hookspec
def ragloom_file_readers() -> Mapping[str, FileReader]:
    """File readers by lower-case extension with its dot: ``{".rst": RstReader()}``."""


@hookspec
def ragloom_llms() -> Mapping[str, Mapping[str, Any] | type]:
    """LLMs by name, as an LLMS spec (``{"class": ..., **params}``) or a class."""


@hookspec
def ragloom_embeddings() -> Mapping[str, Mapping[str, Any] | type]:
    """Embedding models by name, as an EMBEDDINGS spec or a class."""
