"""Tools for agents: a typed interface, structured errors, and the built-in tools."""

from ragloom.agents.tools.base import BaseTool, ToolError, ToolResult
from ragloom.agents.tools.calculator import CalculatorTool, evaluate_expression
from ragloom.agents.tools.docsearch import DocSearchTool
from ragloom.agents.tools.llm import LLMTool

__all__ = [
    "BaseTool",
    "CalculatorTool",
    "DocSearchTool",
    "LLMTool",
    "ToolError",
    "ToolResult",
    "evaluate_expression",
]
