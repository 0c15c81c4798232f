"""Property-based: any expression of the calculator's grammar is computed within the bounds
or refused in words, quickly; nothing but a CalculatorError ever escapes; and the check a
plan's input gets before it runs never refuses an expression that computes.

Each example runs in a sandbox worker (:mod:`ragloom.sandbox`): an expression that slipped
past the bounds and built a giant number would hold the GIL in C, where no pytest timeout
can stop it; there it is killed at its timeout and reported as a failing example.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.agents.tools import CalculatorTool
from ragloom.agents.tools.calculator import (
    CONSTANT_NAMES,
    FUNCTION_NAMES,
    MAX_MAGNITUDE,
    CalculatorError,
    check_expression,
    evaluate_expression,
)
from ragloom.sandbox import Sandbox, SandboxLimits

# Numbers at and past every bound (either sign), and ordinary ones.
BOUNDS = [1, 2, 170, 171, 308, 309, 1000, 1001, 10**7, 10**8, 10**9, 10**308, 10**309, 2**1024]
EDGES = [0, 0.5, 1e-300, *BOUNDS, *(-bound for bound in BOUNDS)]
NUMBERS = st.one_of(
    st.integers(min_value=-1000, max_value=1000),
    st.integers(),
    st.sampled_from(EDGES),
    st.floats(),  # nan and inf too: they are written "nan" and "inf", unknown names
).map(lambda number: f"({number!r})")
LEAVES = NUMBERS | st.sampled_from(CONSTANT_NAMES)
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "^"]


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(OPERATORS), children).map(
        lambda parts: f"({parts[0]} {parts[1]} {parts[2]})"
    )
    unary = st.tuples(st.sampled_from(["-", "+"]), children).map("({0[0]}{0[1]})".format)
    call = st.tuples(st.sampled_from(FUNCTION_NAMES), st.lists(children, max_size=3)).map(
        lambda parts: f"{parts[0]}({', '.join(parts[1])})"
    )
    return binary | unary | call


EXPRESSIONS = st.recursive(LEAVES, _extend, max_leaves=12)
# Arguments and operands for one function or operator: the edges drawn more often, and
# mostly one or two arguments (what the functions take).
OPERANDS = st.sampled_from(EDGES).map(lambda number: f"({number!r})") | NUMBERS
ARGUMENTS = st.one_of(
    st.lists(OPERANDS, min_size=1, max_size=2),
    st.lists(OPERANDS, min_size=1, max_size=2),
    st.lists(OPERANDS, min_size=1, max_size=2),
    st.lists(OPERANDS, max_size=3),
)

# A worker's whole round trip, generous for a busy machine: evaluating takes microseconds.
EXAMPLE_DEADLINE = timedelta(seconds=3)
EXAMPLE_TIMEOUT = 2.0


def evaluate_in_worker(
    expression: str,
) -> tuple[int | float | None, str | None, str, float, str | None]:
    """In a worker: the value or the refusal, what the tool shows, the seconds taken, and
    the refusal of the check before running (``None``: it passed)."""
    started = time.perf_counter()
    try:
        value, refusal = evaluate_expression(expression), None
    except CalculatorError as exc:
        value, refusal = None, str(exc)
    shown = CalculatorTool().invoke({"expression": expression}).as_observation()
    seconds = time.perf_counter() - started
    try:
        check_expression(expression)
        checked = None
    except CalculatorError as exc:
        checked = str(exc)
    return value, refusal, shown, seconds, checked


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox("calculator-properties", SandboxLimits(workers=1, memory_bytes=512 << 20))
    box.run(evaluate_in_worker, "1", timeout=60)  # the worker's start is not an example's
    yield box
    box.close()


def _check(sandbox: Sandbox, expression: str) -> None:
    value, refusal, shown, seconds, checked = sandbox.run(
        evaluate_in_worker, expression, timeout=EXAMPLE_TIMEOUT
    )
    assert seconds < 1.0, f"{expression!r} took {seconds:.2f} s"
    if checked is not None:  # what the check refuses, the calculator refuses too
        assert refusal is not None, f"{expression!r} computes, but its check says {checked}"
    if refusal is not None:
        assert refusal and "failed on this expression" not in refusal, refusal
        assert shown == f"Error [invalid_expression]: {refusal}"
        return
    assert type(value) in (int, float), f"{expression!r} gave a {type(value).__name__}"
    assert not (isinstance(value, float) and math.isnan(value))
    assert abs(value) <= MAX_MAGNITUDE
    assert not shown.startswith("Error")


@settings(max_examples=300, deadline=EXAMPLE_DEADLINE, database=None)
@given(expression=EXPRESSIONS)
def test_any_expression_tree_is_computed_within_the_bound_or_refused(
    sandbox: Sandbox, expression: str
) -> None:
    _check(sandbox, expression)


@pytest.mark.parametrize("function", FUNCTION_NAMES)
@settings(max_examples=200, deadline=EXAMPLE_DEADLINE, database=None)
@given(arguments=ARGUMENTS)
def test_every_function_with_any_arguments_is_bounded(
    sandbox: Sandbox, function: str, arguments: list[str]
) -> None:
    _check(sandbox, f"{function}({', '.join(arguments)})")


@pytest.mark.parametrize("operator", OPERATORS)
@settings(max_examples=100, deadline=EXAMPLE_DEADLINE, database=None)
@given(left=OPERANDS, right=OPERANDS)
def test_every_operator_with_any_operands_is_bounded(
    sandbox: Sandbox, operator: str, left: str, right: str
) -> None:
    _check(sandbox, f"{left} {operator} {right}")
