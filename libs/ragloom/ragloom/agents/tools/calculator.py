"""A calculator tool: arithmetic, powers and math functions by walking the AST.

Never ``eval``: only number literals, the operators below, and the listed functions and
constants are accepted. Sizes are bounded (input length, exponents, result magnitude) so
an expression like ``9**9**9`` is refused at once instead of running for minutes.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools.base import BaseTool, ToolResult

__all__ = ["CalculatorError", "CalculatorTool", "evaluate_expression"]

MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 1000
MAX_MAGNITUDE = 1e300
MAX_NODES = 200

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": math.factorial,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot compute."""


def _check(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError("only numbers are supported")
    if isinstance(value, float) and math.isnan(value):
        raise CalculatorError("the result is not a number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError("the result is too large")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponents are limited to ±{MAX_EXPONENT}")
    if base != 0 and abs(exponent) * math.log10(abs(base) or 1) > 300:
        raise CalculatorError("the result is too large")
    return operator.pow(base, exponent)


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        return _check(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _check(_power(left, right))
        try:
            return _check(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is None:
            known = ", ".join(sorted(_FUNCTIONS))
            raise CalculatorError(f"unknown function {node.func.id!r}; known: {known}")
        arguments = [_evaluate(a) for a in node.args]
        if function is math.factorial and (arguments[:1] or [0])[0] > 170:
            raise CalculatorError("factorial is limited to 170")
        try:
            return _check(function(*arguments))
        except (ValueError, TypeError, OverflowError) as exc:
            raise CalculatorError(f"{node.func.id}: {exc}") from None
    raise CalculatorError(f"unsupported syntax: {type(node).__name__}")


def evaluate_expression(expression: str) -> int | float:
    """The value of an arithmetic expression; raises :class:`CalculatorError`."""
    # "1,234" is a thousands separator (LLMs copy numbers so); "f(1, 2)" separates arguments.
    text = _THOUSANDS.sub("", expression.strip().replace("^", "**"))
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(f"expressions are limited to {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise CalculatorError("the expression is too long")
    return _evaluate(tree)


class CalculatorTool(BaseTool):
    """Evaluates arithmetic: + - * / // % ** (or ^), parentheses, math functions."""

    class Arguments(BaseModel):
        """The calculator's input."""

        expression: str = Field(description="An arithmetic expression, e.g. 3.5 ** 0.98 * 2")

    name: ClassVar[str] = "calculator"
    description: ClassVar[str] = (
        "Evaluate an arithmetic expression (+ - * / ** and sqrt, log, exp, round, ...)."
    )

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, CalculatorTool.Arguments)
        try:
            value = evaluate_expression(arguments.expression)
        except CalculatorError as exc:
            return ToolResult.failure("invalid_expression", str(exc))
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        return ToolResult(content=f"{value:.10g}" if isinstance(value, float) else str(value))
