"""A calculator tool: arithmetic, powers and math functions by walking the AST.

Never ``eval``: only number literals, the operators below, and the listed functions and
constants are accepted. Every value, argument and result is bounded, so that no
expression makes CPython build a giant number: CPython does that in C while holding the
GIL (``round(5, -10**8)`` computes ``10**(10**8)``), which would freeze every thread of
the process, timeouts included. The bounds:

- the input: :data:`MAX_EXPRESSION_LENGTH` characters, :data:`MAX_NODES` syntax nodes;
- every value (a literal, an argument, a result): a real number of magnitude at most
  :data:`MAX_MAGNITUDE`, the largest float, so each converts to a float and no single
  operation on two of them is slow;
- ``**``: exponents within ±:data:`MAX_EXPONENT`, and a result estimated (from the
  logarithm) within :data:`MAX_MAGNITUDE` before it is computed;
- ``round``: ``ndigits`` a whole number within ±:data:`MAX_ROUND_DIGITS`; ``factorial``: a
  whole number from 0 to :data:`MAX_FACTORIAL`; every function its number of arguments.

Anything refused or not computable (``0 ** -1``, ``log(5, 1)``, ``sqrt(-1)``, an overflow)
raises :class:`CalculatorError` with a message saying why, and nothing else escapes
:func:`evaluate_expression`.
"""

from __future__ import annotations

import ast
import logging
import math
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools.base import BaseTool, ResultKind, ToolResult

__all__ = [
    "CONSTANT_NAMES",
    "FUNCTION_NAMES",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_LENGTH",
    "MAX_FACTORIAL",
    "MAX_MAGNITUDE",
    "MAX_NODES",
    "MAX_ROUND_DIGITS",
    "CalculatorError",
    "CalculatorTool",
    "check_expression",
    "evaluate_expression",
]

logger = logging.getLogger(__name__)

MAX_EXPRESSION_LENGTH = 500
"""Characters of one expression (after removing thousands separators)."""
MAX_NODES = 200
"""Syntax-tree nodes of one expression: bounds the work and the recursion depth."""
MAX_MAGNITUDE = sys.float_info.max
"""Largest magnitude of any value: the largest float (about 1.8e308)."""
MAX_EXPONENT = 1000
"""Largest magnitude of an exponent of ``**``."""
MAX_ROUND_DIGITS = 308
"""Largest magnitude of ``round``'s ``ndigits``: past it every bounded value rounds to
itself or to 0, and a huge negative one would make CPython build ``10**-ndigits``."""
MAX_FACTORIAL = 170
"""Largest argument of ``factorial``: 171! is past :data:`MAX_MAGNITUDE`."""

_MAX_LOG10 = math.log10(MAX_MAGNITUDE)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_INTERNAL = "the calculator failed on this expression"
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot compute."""


def _check(value: Any, what: str = "the result") -> int | float:
    """``value`` if it is a real number within the bounds; else :class:`CalculatorError`."""
    if isinstance(value, complex):
        raise CalculatorError(f"{what} is not a real number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError("only numbers are supported")
    if isinstance(value, float) and math.isnan(value):
        raise CalculatorError(f"{what} is not a number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError(f"{what} is too large (the limit is {MAX_MAGNITUDE:.2g})")
    return value


def _is_whole(value: int | float) -> bool:
    return isinstance(value, int) or value.is_integer()


def _compute(what: str, function: Callable[..., Any], *arguments: Any) -> int | float:
    """``function(*arguments)``, checked, with Python's arithmetic errors made clear.

    ``what`` names a function in the messages (empty for an operator)."""
    named = f"{what}: " if what else ""
    try:
        return _check(function(*arguments))
    except CalculatorError:
        raise
    except ZeroDivisionError:
        raise CalculatorError(f"{named}division by zero") from None
    except OverflowError:
        raise CalculatorError(f"{named}the result is too large") from None
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise CalculatorError(f"{named}cannot compute it ({exc})") from None


def _power(base: int | float, exponent: int | float) -> int | float:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponents are limited to ±{MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise CalculatorError("0 cannot be raised to a negative power")
    if base < 0 and not _is_whole(exponent):
        raise CalculatorError("a negative number to a fractional power is not a real number")
    # Estimated before computing: the work of an integer power grows with its digits.
    if base != 0 and exponent * math.log10(abs(base)) > _MAX_LOG10:
        raise CalculatorError("the result is too large")
    return _compute("", operator.pow, base, exponent)


def _round(value: int | float, ndigits: int | float | None = None) -> int | float:
    if ndigits is None:
        return round(value)
    if not _is_whole(ndigits) or abs(ndigits) > MAX_ROUND_DIGITS:
        raise CalculatorError(
            f"round: the number of digits must be a whole number from "
            f"-{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}"
        )
    return round(value, int(ndigits))


def _factorial(value: int | float) -> int:
    if not _is_whole(value) or not 0 <= value <= MAX_FACTORIAL:
        raise CalculatorError(f"factorial takes a whole number from 0 to {MAX_FACTORIAL}")
    return math.factorial(int(value))


def _positive(name: str, function: Callable[[float], float]) -> Callable[[int | float], float]:
    def logarithm(value: int | float) -> float:
        if value <= 0:
            raise CalculatorError(f"{name}: the number must be positive")
        return function(value)

    return logarithm


def _log(value: int | float, base: int | float | None = None) -> float:
    if value <= 0:
        raise CalculatorError("log: the number must be positive")
    if base is None:
        return math.log(value)
    if base <= 0 or base == 1:
        raise CalculatorError("log: the base must be positive and not 1")
    return math.log(value, base)


def _sqrt(value: int | float) -> float:
    if value < 0:
        raise CalculatorError("sqrt: the square root of a negative number is not a real number")
    return math.sqrt(value)


@dataclass(frozen=True)
class _Function:
    """An allowed function: what computes it and how many arguments it takes."""

    compute: Callable[..., Any]
    fewest: int = 1
    most: int = 1

    def arity(self) -> str:
        if self.most >= MAX_NODES:
            return f"at least {self.fewest} argument"
        if self.fewest == self.most:
            return f"{self.fewest} argument{'s' if self.fewest != 1 else ''}"
        return f"{self.fewest} or {self.most} arguments"


_FUNCTIONS: dict[str, _Function] = {
    "abs": _Function(abs),
    "round": _Function(_round, 1, 2),
    "min": _Function(lambda *values: min(values), 1, MAX_NODES),
    "max": _Function(lambda *values: max(values), 1, MAX_NODES),
    "sqrt": _Function(_sqrt),
    "exp": _Function(math.exp),
    "log": _Function(_log, 1, 2),
    "log10": _Function(_positive("log10", math.log10)),
    "log2": _Function(_positive("log2", math.log2)),
    "sin": _Function(math.sin),
    "cos": _Function(math.cos),
    "tan": _Function(math.tan),
    "floor": _Function(math.floor),
    "ceil": _Function(math.ceil),
    "factorial": _Function(_factorial),
}

FUNCTION_NAMES: tuple[str, ...] = tuple(sorted(_FUNCTIONS))
"""The functions an expression may call."""
CONSTANT_NAMES: tuple[str, ...] = tuple(sorted(_CONSTANTS))
"""The names an expression may use."""

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def _function(node: ast.Call) -> tuple[str, _Function]:
    """The allowed function ``node`` calls, with its name; refuses any other call."""
    if not isinstance(node.func, ast.Name):
        raise CalculatorError("only the listed functions can be called, by name")
    name = node.func.id
    function = _FUNCTIONS.get(name)
    if function is None:
        known = ", ".join(FUNCTION_NAMES)
        raise CalculatorError(f"unknown function {name!r}; known: {known}")
    if node.keywords:
        raise CalculatorError(f"{name} takes its arguments by position, not by name")
    if not function.fewest <= len(node.args) <= function.most:
        raise CalculatorError(f"{name} takes {function.arity()}, got {len(node.args)}")
    return name, function


def _constant(node: ast.Name) -> float:
    if node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    raise CalculatorError(f"unknown name {node.id!r}")


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        return _check(node.value, "a number in the expression")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        function = _BINARY[type(node.op)]
        return _compute("", function, _evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name):
        return _constant(node)
    if isinstance(node, ast.Call):
        name, allowed = _function(node)
        return _compute(name, allowed.compute, *(_evaluate(a) for a in node.args))
    raise CalculatorError(f"unsupported syntax: {type(node).__name__}")


def _check_syntax(node: ast.AST) -> None:
    """What :func:`_evaluate` would refuse before computing anything, without computing."""
    if isinstance(node, ast.Expression):
        _check_syntax(node.body)
    elif isinstance(node, ast.Constant):
        _check(node.value, "a number in the expression")
    elif isinstance(node, ast.BinOp) and (isinstance(node.op, ast.Pow) or type(node.op) in _BINARY):
        _check_syntax(node.left)
        _check_syntax(node.right)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check_syntax(node.operand)
    elif isinstance(node, ast.Name):
        _constant(node)
    elif isinstance(node, ast.Call):
        _function(node)
        for argument in node.args:
            _check_syntax(argument)
    else:
        raise CalculatorError(f"unsupported syntax: {type(node).__name__}")


def _parse(expression: str) -> ast.Expression:
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
    return tree


def check_expression(expression: str) -> None:
    """Raise :class:`CalculatorError` if the calculator would refuse ``expression`` as
    written (its length, its syntax, a name or function it does not know); computes
    nothing, so ``1 / 0`` passes. Bounded like :func:`evaluate_expression`."""
    try:
        _check_syntax(_parse(expression))
    except CalculatorError:
        raise
    except Exception as exc:
        logger.warning("calculator: unexpected %s checking %r", type(exc).__name__, expression[:80])
        raise CalculatorError(f"{_INTERNAL} ({type(exc).__name__})") from None


def evaluate_expression(expression: str) -> int | float:
    """The value of an arithmetic expression; raises :class:`CalculatorError` only."""
    try:
        return _evaluate(_parse(expression))
    except CalculatorError:
        raise
    except Exception as exc:
        # Every bound above should have caught it; the tool still fails in words.
        logger.warning("calculator: unexpected %s on %r", type(exc).__name__, expression[:80])
        raise CalculatorError(f"{_INTERNAL} ({type(exc).__name__})") from None


class CalculatorTool(BaseTool):
    """Evaluates arithmetic: + - * / // % ** (or ^), parentheses, math functions.

    A plan's input for it is checked before it runs (:func:`check_expression`).
    Deterministic (a timed-out call would time out again, so it is not retried) and run
    in the tool sandbox with a short time limit of its own.
    """

    class Arguments(BaseModel):
        """The calculator's input."""

        expression: str = Field(description="An arithmetic expression, e.g. 3.5 ** 0.98 * 2")

    name: ClassVar[str] = "calculator"
    description: ClassVar[str] = (
        "Evaluate an arithmetic expression (+ - * / ** and sqrt, log, exp, round, ...)."
    )
    deterministic: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 5.0
    result_kind: ClassVar[ResultKind] = "number"
    # Passages are never an arithmetic expression; another tool's text may be a number.
    accepts: ClassVar[frozenset[ResultKind]] = frozenset(("number", "text"))

    @classmethod
    def check_input(cls, text: str) -> str | None:
        """Why ``text`` is not an expression the calculator takes (parsed, not computed)."""
        try:
            check_expression(text)
        except CalculatorError as exc:
            return str(exc)
        return None

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, CalculatorTool.Arguments)
        try:
            value = evaluate_expression(arguments.expression)
        except CalculatorError as exc:
            return ToolResult.failure("invalid_expression", str(exc))
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        return ToolResult(content=f"{value:.10g}" if isinstance(value, float) else str(value))
