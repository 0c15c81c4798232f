"""The calculator evaluates arithmetic by walking the AST, and refuses everything else."""

import pytest

from ragloom.agents.tools import CalculatorTool, evaluate_expression
from ragloom.agents.tools.calculator import CalculatorError


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
        ("__import__('os').system('true')", "unsupported syntax"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("(1).__class__", "unsupported syntax: Attribute"),
        ("9 ** 9 ** 9", "exponents are limited"),
        ("10 ** 400", "too large"),
        ("factorial(100000)", "factorial is limited"),
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
