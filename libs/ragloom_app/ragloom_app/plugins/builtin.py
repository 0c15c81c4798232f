"""Ragloom's own plugin: what the settings list, registered through the plugin hooks.

The app asks it first (it is in :data:`ragloom_app.plugins.manager.DEFAULT_PLUGINS`),
so an installed plugin may replace any of its entries, with the usual warning. A wrong
dotted path in a setting stops start-up with the error naming the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragloom.agents.tools import BUILTIN_TOOLS, BaseTool
from ragloom.loaders import FileReader, default_readers
from ragloom_app.plugins import hookimpl
from ragloom_app.registry import import_subclass

if TYPE_CHECKING:
    from ragloom_app.app import BaseApp
    from ragloom_app.index.base import BaseIndex
    from ragloom_app.reasoning.base import BaseReasoning

__all__ = [
    "ragloom_embeddings",
    "ragloom_file_readers",
    "ragloom_index_types",
    "ragloom_llms",
    "ragloom_reasonings",
    "ragloom_tools",
]


@hookimpl
def ragloom_reasonings(app: BaseApp) -> list[type[BaseReasoning]]:
    """The modes of ``REASONINGS``, in its order."""
    from ragloom_app.reasoning.base import BaseReasoning

    return [
        import_subclass(f"REASONINGS[{position}]", path, BaseReasoning)
        for position, path in enumerate(app.settings.reasonings)
    ]


@hookimpl
def ragloom_index_types(app: BaseApp) -> dict[str, type[BaseIndex]]:
    """The index types of ``INDEX_TYPES``, under the dotted paths it names them by."""
    from ragloom_app.index.base import BaseIndex

    return {
        path: import_subclass(f"INDEX_TYPES[{position}]", path, BaseIndex)
        for position, path in enumerate(app.settings.index_types)
    }


@hookimpl
def ragloom_tools() -> tuple[type[BaseTool], ...]:
    """The agents' built-in tools: docsearch, calculator, llm."""
    return BUILTIN_TOOLS


@hookimpl
def ragloom_file_readers() -> dict[str, FileReader]:
    """The built-in readers by extension (PDF, HTML, Markdown, text, ...)."""
    return default_readers()


@hookimpl
def ragloom_llms(app: BaseApp) -> dict[str, Any]:
    """The LLMs of ``LLMS``."""
    return dict(app.settings.llms)


@hookimpl
def ragloom_embeddings(app: BaseApp) -> dict[str, Any]:
    """The embedding models of ``EMBEDDINGS``."""
    return dict(app.settings.embeddings)
