"""The calculator evaluates arithmetic by walking the AST, and refuses everything else."""

import math
import re

import pytest

from ragloom.agents.tools import CalculatorTool, evaluate_expression
from ragloom.agents.tools.calculator import CalculatorError, check_expression


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 ** 10", 1024),
        ("2 ^ 10", 1024),
        ("-3 + +5", 2),
        ("7 // 2 + 7 % 2", 4),
        ("sqrt(16) + log10(1000)", 7.0),
        ("round(3.14159, 2)", 3.14),
        ("max(1, 5, 3) - min(4, 2)", 3),
        ("1,234 + 1", 1235),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate_expression(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "only the listed functions can be called"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("(1).__class__", "unsupported syntax: Attribute"),
        ("9 ** 9 ** 9", "exponents are limited"),
        ("10 ** 400", "too large"),
        ("factorial(100000)", "factorial takes a whole number from 0 to 170"),
        ("1 / 0", "division by zero"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 3", "only numbers"),
        ("1 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1+" * 400 + "1", "limited to 500 characters"),
        ("[1, 2]", "unsupported syntax"),
        ("lambda: 1", "unsupported syntax"),
    ],
)
def test_refusals_are_clear(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message):
        evaluate_expression(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # Each of these made CPython build a giant number (or fail) before its result was
        # checked; now its arguments are, before anything is computed.
        ("round(5, -10**8)", "round: the number of digits must be a whole number from -308"),
        ("round(5, 10**8)", "from -308 to 308"),
        ("round(2.5, 0.5)", "must be a whole number"),
        ("factorial(171)", "factorial takes a whole number from 0 to 170"),
        ("factorial(2.5)", "factorial takes a whole number"),
        ("factorial(-1)", "factorial takes a whole number"),
        ("0 ** -1", "0 cannot be raised to a negative power"),
        ("0.0 ** -2.5", "0 cannot be raised to a negative power"),
        ("0.001 ** -1000", "the result is too large"),
        ("(-8) ** (1/3)", "a negative number to a fractional power is not a real number"),
        ("2 ** 1024.0", "exponents are limited to ±1000"),
        ("exp(1000)", "exp: the result is too large"),
        ("1e308 * 10", "the result is too large"),
        ("9" * 400, "a number in the expression is too large"),
        ("1e400", "a number in the expression is too large"),
        ("1j", "is not a real number"),
        ("True + 1", "only numbers"),
        ("log(5, 1)", "log: the base must be positive and not 1"),
        ("log(5, -2)", "log: the base must be positive"),
        ("log(0)", "log: the number must be positive"),
        ("log10(-1)", "log10: the number must be positive"),
        ("log2(0)", "log2: the number must be positive"),
        ("sqrt(-1)", "sqrt: the square root of a negative number is not a real number"),
        ("5 % 0", "division by zero"),
        ("5 // 0.0", "division by zero"),
        ("min()", "min takes at least 1 argument, got 0"),
        ("abs(1, 2)", "abs takes 1 argument, got 2"),
        ("round(1, 2, 3)", "round takes 1 or 2 arguments, got 3"),
        ("sqrt()", "sqrt takes 1 argument, got 0"),
        ("round(number=1)", "takes its arguments by position"),
        ("max(*[1, 2])", "unsupported syntax: Starred"),
        ("-" * 300 + "1", "the expression is too long"),
        ("1 < 2", "unsupported syntax: Compare"),
        ("~1", "unsupported syntax: UnaryOp"),
    ],
)
def test_every_argument_is_bounded_before_anything_is_computed(
    expression: str, message: str
) -> None:
    with pytest.raises(CalculatorError, match=re.escape(message)):
        evaluate_expression(expression)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("round(5, -300)", 0),
        ("round(123456, -3)", 123000),
        ("factorial(170)", math.factorial(170)),
        ("10 ** 308", 10**308),
        ("2 ** -1000", 2.0**-1000),
        ("(-8) ** 2.0", 64.0),
        ("log(8, 2)", 3.0),
        ("min(3)", 3),
        ("floor(1e308)", math.floor(1e308)),
        ("10 ** 308 // 3", 10**308 // 3),
    ],
)
def test_values_up_to_the_bounds_are_computed(expression: str, value: float) -> None:
    assert evaluate_expression(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    "expression", ["a\x00b", "(" * 300 + "1" + ")" * 300, "'''", "1e", "round.__call__(1)"]
)
def test_malformed_input_fails_as_a_calculator_error(expression: str) -> None:
    with pytest.raises(CalculatorError):
        evaluate_expression(expression)


def test_tool_returns_content_or_a_structured_error() -> None:
    tool = CalculatorTool()
    assert tool.invoke("3.5 ** 0.98").content == "3.413396065"
    assert tool.invoke('{"expression": "2*21"}').content == "42"
    assert tool.invoke('```json\n{"expression": "6*7"}\n```').content == "42"
    failed = tool.invoke("1/0")
    assert not failed.ok and failed.error.code == "invalid_expression"
    assert failed.as_observation() == "Error [invalid_expression]: division by zero"
    assert tool.invoke({"wrong": 1}).error.code == "invalid_arguments"


def test_schema_describes_the_arguments() -> None:
    schema = CalculatorTool.parameters_schema()
    assert schema["required"] == ["expression"]
    assert "description" in schema["properties"]["expression"]


@pytest.mark.parametrize(
    "expression", ["1 / 0", "9 ** 9 ** 9", "factorial(171)", "log(0)", "1,234 * 2 ^ 3", "pi * e"]
)
def test_the_check_before_a_plan_runs_parses_and_computes_nothing(expression: str) -> None:
    check_expression(expression)  # each is refused only when computed
    assert CalculatorTool.check_input(expression) is None


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[1] (reactor.md) The Zorblax reactor runs at 451 kelvin.", "not an arithmetic"),
        ("x" * 501, "limited to 500 characters"),
        ("451 kelvin", "not an arithmetic expression"),
        ("Acme * 0.92", "unknown name 'Acme'"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("round(1, 2, 3)", "round takes 1 or 2 arguments, got 3"),
        ("(1).__class__", "unsupported syntax: Attribute"),
        ("'a' * 3", "only numbers"),
        ("1e400", "a number in the expression is too large"),
        ("", "empty"),
    ],
)
def test_the_check_refuses_what_is_not_an_expression_in_the_calculators_words(
    expression: str, message: str
) -> None:
    with pytest.raises(CalculatorError, match=message):
        check_expression(expression)
    reason = CalculatorTool.check_input(expression)
    assert reason is not None and re.search(message, reason)
