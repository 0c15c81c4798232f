"""Tools for agents: a typed interface, structured errors, the built-ins and a registry."""

from ragloom.agents.tools.base import (
    RESULT_KINDS,
    BaseTool,
    ResultKind,
    ToolContext,
    ToolError,
    ToolResult,
)
from ragloom.agents.tools.calculator import (
    CalculatorError,
    CalculatorTool,
    check_expression,
    evaluate_expression,
)
from ragloom.agents.tools.cancel import ToolCancelled, cancel_requested, raise_if_cancelled
from ragloom.agents.tools.docsearch import DocSearchTool
from ragloom.agents.tools.limits import ToolLimits
from ragloom.agents.tools.llm import LLMTool
from ragloom.agents.tools.registry import BUILTIN_TOOLS, ToolRegistry, check_runnable
from ragloom.agents.tools.runner import ToolCall, ToolRunner, warm_tools_sandbox

__all__ = [
    "BUILTIN_TOOLS",
    "RESULT_KINDS",
    "BaseTool",
    "CalculatorError",
    "CalculatorTool",
    "DocSearchTool",
    "LLMTool",
    "ResultKind",
    "ToolCall",
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolLimits",
    "ToolRegistry",
    "ToolResult",
    "ToolRunner",
    "cancel_requested",
    "check_expression",
    "check_runnable",
    "evaluate_expression",
    "raise_if_cancelled",
    "warm_tools_sandbox",
]
