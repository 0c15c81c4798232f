"""docs/architecture.md's "Where things live" table names real files and real names.

Each row gives paths and names (``;``-separated, paired in order, or several names in one
path); a name is a module-level class, function or constant, or ``Class.member``. Read with
``ast``, so nothing is imported and the check takes milliseconds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
_CODE = re.compile(r"`([^`]+)`")


def _rows() -> list[tuple[str, list[str], list[str]]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[1].startswith("`"):
            continue  # prose, the header or the separator row
        what, paths, names = cells
        rows.append((what, _CODE.findall(paths), _CODE.findall(names)))
    return rows


def _defined(tree: ast.Module, name: str) -> bool:
    owner, _, member = name.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        if not classes:
            return False
        body = classes[0].body
    return any(member in _names_bound(node) for node in body)


def _names_bound(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


ROWS = _rows()


def test_the_table_has_its_rows() -> None:
    assert len(ROWS) >= 15


@pytest.mark.parametrize(("what", "paths", "names"), ROWS, ids=[row[0] for row in ROWS])
def test_each_row_names_a_file_that_defines_the_name(
    what: str, paths: list[str], names: list[str]
) -> None:
    assert paths and names, f"{what!r}: no path or no name"
    assert len(paths) in (1, len(names)), f"{what!r}: {len(paths)} paths for {len(names)} names"
    pairs = zip(paths * len(names) if len(paths) == 1 else paths, names, strict=True)
    for path, name in pairs:
        file = ROOT / path
        assert file.is_file(), f"{what!r}: {path} does not exist"
        tree = ast.parse(file.read_text(encoding="utf-8"))
        assert _defined(tree, name), f"{what!r}: {path} defines no {name}"
