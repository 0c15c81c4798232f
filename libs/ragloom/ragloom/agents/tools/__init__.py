"""Tools for agents: a typed interface, structured errors, the built-ins and a registry."""

from ragloom.agents.tools.base import BaseTool, ToolContext, ToolError, ToolResult
from ragloom.agents.tools.calculator import CalculatorTool, evaluate_expression
from ragloom.agents.tools.docsearch import DocSearchTool
from ragloom.agents.tools.llm import LLMTool
from ragloom.agents.tools.registry import BUILTIN_TOOLS, ToolRegistry

__all__ = [
    "BUILTIN_TOOLS",
    "BaseTool",
    "CalculatorTool",
    "DocSearchTool",
    "LLMTool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "evaluate_expression",
]
