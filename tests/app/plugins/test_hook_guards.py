"""Guards, as Datasette has: every hook has a slot row, is documented and has a test.

A hook is documented by a heading ``### `ragloom_x(app)` `` (with the spec's arguments)
in docs/plugins.md's "Hook reference", and tested by a test function named
``test_hook_ragloom_x...`` in a module of tests/app/plugins/.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from ragloom_app.plugins import hookspecs
from ragloom_app.plugins.slots import SLOTS

PROJECT = Path(__file__).resolve().parents[3]
HOOKS = sorted(
    name
    for name, function in vars(hookspecs).items()
    if name.startswith("ragloom_") and hasattr(function, "ragloom_spec")
)


def _hook_reference() -> str:
    text = (PROJECT / "docs" / "plugins.md").read_text()
    start = text.index("\n## Hook reference")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _plugin_test_names() -> set[str]:
    names: set[str] = set()
    for module in (PROJECT / "tests" / "app" / "plugins").glob("test_*.py"):
        tree = ast.parse(module.read_text())
        names.update(
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        )
    return names


def test_there_are_hooks() -> None:
    assert "ragloom_reasonings" in HOOKS and len(HOOKS) >= 6


def test_every_hook_has_one_slot_row_and_every_row_a_hook() -> None:
    rows = [slot.hook for slot in SLOTS]
    assert sorted(rows) == HOOKS
    assert len({slot.kind for slot in SLOTS}) == len(SLOTS)


@pytest.mark.parametrize("hook", HOOKS)
def test_plugin_hooks_are_documented(hook: str) -> None:
    arguments = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    heading = f"### `{hook}({arguments})`"
    reference = _hook_reference()
    assert heading in reference.splitlines(), (
        f"docs/plugins.md's Hook reference has no heading {heading!r}"
    )


def test_the_hook_reference_documents_no_hook_that_is_gone() -> None:
    documented = set(re.findall(r"^### `(ragloom_\w+)\(", _hook_reference(), re.M))
    assert documented == set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_plugin_hooks_have_tests(hook: str) -> None:
    names = _plugin_test_names()
    assert any(name.startswith(f"test_hook_{hook}") for name in names), (
        f"no test named test_hook_{hook}... in tests/app/plugins/"
    )
