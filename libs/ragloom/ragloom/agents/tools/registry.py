"""The tools agents may use, by name: the built-ins plus whatever plugins register.

The registry holds tool classes, never tool objects: :meth:`ToolRegistry.build` makes
fresh tools for each request from its :class:`~ragloom.agents.tools.base.ToolContext`,
so no request sees another's retrievers or evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ragloom.agents.tools.base import RESULT_KINDS, BaseTool, ToolContext
from ragloom.agents.tools.calculator import CalculatorTool
from ragloom.agents.tools.docsearch import DocSearchTool
from ragloom.agents.tools.llm import LLMTool

__all__ = ["BUILTIN_TOOLS", "ToolRegistry", "check_runnable", "is_tool_name"]

logger = logging.getLogger(__name__)

BUILTIN_TOOLS: tuple[type[BaseTool], ...] = (DocSearchTool, CalculatorTool, LLMTool)


def is_tool_name(name: object) -> bool:
    """Whether agents can call a tool of this ``name``: a lower-case identifier. The plan
    and ReAct parsers read a tool's name in lower case, as small models write it in any
    case; ``WebSearch`` could be registered but never called."""
    return isinstance(name, str) and name.isidentifier() and name == name.lower()


def check_runnable(tool: type[BaseTool]) -> None:
    """Raise ``TypeError``, saying what to set, if ``tool`` cannot run the way it says.

    A sandboxed tool is sent to a worker process by reference to its class, so the class
    must be importable by name, and it cannot hold the request, so it must not override
    ``from_context``. ``timeout`` must be ``None`` or a positive number of seconds;
    ``result_kind`` one of :data:`~ragloom.agents.tools.base.RESULT_KINDS` and ``accepts``
    a set of them; ``check_input`` callable.
    """
    where = f"{tool.__module__}.{tool.__qualname__}"
    kinds = ", ".join(sorted(RESULT_KINDS))
    if getattr(tool, "result_kind", None) not in RESULT_KINDS:
        raise TypeError(f"{where}.result_kind must be one of: {kinds}")
    accepts = getattr(tool, "accepts", None)
    if not isinstance(accepts, frozenset | set) or not accepts <= RESULT_KINDS:
        raise TypeError(f"{where}.accepts must be a frozenset of: {kinds}")
    if not callable(getattr(tool, "check_input", None)):
        raise TypeError(f"{where}.check_input must be a classmethod taking the input text")
    own_timeout = getattr(tool, "timeout", None)
    if own_timeout is not None and (
        isinstance(own_timeout, bool)
        or not isinstance(own_timeout, int | float)
        or not own_timeout > 0
    ):
        raise TypeError(f"{where}.timeout must be None or a positive number of seconds")
    if not tool.sandboxed:
        return
    builds = getattr(tool.from_context, "__func__", tool.from_context)
    if builds is not BaseTool.from_context.__func__:  # type: ignore[attr-defined]
        raise TypeError(
            f"{where} overrides from_context() to use the request (its LLM, retrievers or "
            "ledger), which cannot be sent to the tool sandbox's worker process: set "
            "`sandboxed = False` on it (it then runs in a thread of the app and must stop "
            "when ragloom.agents.tools.cancel_requested() says so)"
        )
    if "<locals>" in tool.__qualname__:
        raise TypeError(
            f"{where} is defined inside a function, where the tool sandbox's worker "
            "process cannot import it: define it at the top level of a module, or set "
            "`sandboxed = False` on it"
        )


class ToolRegistry:
    """Tool classes by name; a later registration under a taken name replaces it."""

    def __init__(self, tools: Iterable[type[BaseTool]] = BUILTIN_TOOLS) -> None:
        self._tools: dict[str, type[BaseTool]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: type[BaseTool]) -> None:
        """Make ``tool`` available to agents under ``tool.name``.

        Raises ``TypeError`` for a tool that cannot run as it says (see
        :func:`check_runnable`) and ``ValueError`` for a name agents cannot write.
        """
        if not (isinstance(tool, type) and issubclass(tool, BaseTool)):
            raise TypeError(f"{tool!r} is not a BaseTool subclass")
        name = getattr(tool, "name", "")
        if not is_tool_name(name):
            raise ValueError(
                f"{tool.__qualname__}.name must be a lower-case identifier, not {name!r}"
            )
        check_runnable(tool)
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
        """Fresh tools for one request: all of them, or those ``names`` (unknown ones raise).

        A tool whose ``from_context`` raises (a plugin missing its configuration, say) is
        left out of this request with a warning naming it: one tool that cannot be set up
        must not make every question of the agent modes fail, and the model cannot call a
        tool it is not offered.
        """
        chosen = self.names() if names is None else list(names)
        unknown = [n for n in chosen if n not in self._tools]
        if unknown:
            raise KeyError(f"unknown tools {unknown}; available: {', '.join(self._tools)}")
        tools: dict[str, BaseTool] = {}
        for name in chosen:
            tool = self._tools[name]
            try:
                tools[name] = tool.from_context(context)
            except Exception:
                logger.warning(
                    "tool %r (%s) left out of this request: it could not be set up",
                    name,
                    tool.__qualname__,
                    exc_info=True,
                )
        return tools
