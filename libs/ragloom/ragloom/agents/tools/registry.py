"""The tools agents may use, by name: the built-ins plus whatever plugins register.

The registry holds tool classes, never tool objects: :meth:`ToolRegistry.build` makes
fresh tools for each request from its :class:`~ragloom.agents.tools.base.ToolContext`,
so no request sees another's retrievers or evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ragloom.agents.tools.base import BaseTool, ToolContext
from ragloom.agents.tools.calculator import CalculatorTool
from ragloom.agents.tools.docsearch import DocSearchTool
from ragloom.agents.tools.llm import LLMTool

__all__ = ["BUILTIN_TOOLS", "ToolRegistry"]

logger = logging.getLogger(__name__)

BUILTIN_TOOLS: tuple[type[BaseTool], ...] = (DocSearchTool, CalculatorTool, LLMTool)


class ToolRegistry:
    """Tool classes by name; a later registration under a taken name replaces it."""

    def __init__(self, tools: Iterable[type[BaseTool]] = BUILTIN_TOOLS) -> None:
        self._tools: dict[str, type[BaseTool]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: type[BaseTool]) -> None:
        """Make ``tool`` available to agents under ``tool.name``."""
        if not (isinstance(tool, type) and issubclass(tool, BaseTool)):
            raise TypeError(f"{tool!r} is not a BaseTool subclass")
        name = getattr(tool, "name", "")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{tool.__qualname__}.name must be an identifier, not {name!r}")
        previous = self._tools.get(name)
        if previous is not None and previous is not tool:
            logger.warning(
                "tool %r registered twice (%s, then %s); the later one wins",
                name,
                previous.__qualname__,
                tool.__qualname__,
            )
        self._tools[name] = tool

    def names(self) -> list[str]:
        """The registered tool names, in registration order."""
        return list(self._tools)

    def get(self, name: str) -> type[BaseTool]:
        """The tool class registered as ``name`` (``KeyError`` if none)."""
        return self._tools[name]

    def build(
        self, context: ToolContext, names: Iterable[str] | None = None
    ) -> dict[str, BaseTool]:
        """Fresh tools for one request: all of them, or those ``names`` (unknown ones raise)."""
        chosen = self.names() if names is None else list(names)
        unknown = [n for n in chosen if n not in self._tools]
        if unknown:
            raise KeyError(f"unknown tools {unknown}; available: {', '.join(self._tools)}")
        return {name: self._tools[name].from_context(context) for name in chosen}
