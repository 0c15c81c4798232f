"""CSV and JSON files, written out as self-describing lines of text.

A chunk of a table is only useful to the LLM if it says what its values are, so every line
names its fields: a CSV row becomes ``"header1: value1; header2: value2"`` and a JSON value
``"path.to.key: value"``. The splitter packs those lines into chunks.

Repeating names is also how a small file becomes a huge text (a 2 MB file, a 1 MB header
over half a million one-character rows, would be 500 GB), so names are abbreviated: a CSV
header keeps its first :data:`MAX_HEADER_CHARS` characters, a JSON key path its last
:data:`MAX_KEY_PATH_CHARS` (``…offices[3].address.city``), and every line counts against
the reader's :class:`~ragloom.loaders.base.TextBudget` as it is built. With names that
short a line is at most (48 + 5) / 2 = 26.5 times the bytes it came from (a one-character
value and its delimiter), under the budget's default ratio of 32.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragloom.loaders.base import (
    EmptyDocumentError,
    TextBudget,
    TextMeter,
    UnreadableFileError,
    read_bytes,
    without_surrogates,
)
from ragloom.loaders.text import text_of
from ragloom.schema import Page

__all__ = [
    "MAX_HEADER_CHARS",
    "MAX_KEY_PATH_CHARS",
    "CsvReader",
    "JsonReader",
    "abbreviate_header",
]

logger = logging.getLogger(__name__)

MAX_HEADER_CHARS = 48
"""A longer CSV header is cut to its first 47 characters and ``…`` on every row's line."""
MAX_KEY_PATH_CHARS = 48
"""A longer JSON key path keeps its last characters after ``…``, from a key where it can."""

# The sniffer sees the first rows only; guessing among the delimiters spreadsheets actually
# write keeps it from choosing a letter that happens to repeat in every line. Its regular
# expressions are quadratic in the sample, holding the GIL: 12 s for 64 KiB of ',"' and
# 17 s for a quoted field and 64 KiB of ','. 4 KiB bounds them to 70 ms and is still
# dozens of rows of an ordinary table (Python's documentation sniffs 1 KiB).
_SNIFF_CHARS = 4 * 1024
_DELIMITERS = ",;\t|"

# A JSON key written with a dot after its parent's path only when that is unambiguous.
_PLAIN_KEY = re.compile(r"[^.\[\]\s\"]+")


def _one_line(value: str) -> str:
    """``value`` with every run of whitespace (newlines included) made one space."""
    return " ".join(value.split())


class CsvReader:
    """Reads ``.csv`` files: the first row names the columns, every other row is a line.

    The delimiter (comma, semicolon, tab or bar) and the quoting are sniffed from the start of
    the file, falling back to Excel's comma-separated dialect. Empty cells are left out of a
    row's line, and blank rows are skipped. A header longer than :data:`MAX_HEADER_CHARS` is
    cut; a file whose lines would go past ``budget`` is refused as soon as they do.
    """

    extensions: tuple[str, ...] = (".csv",)

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.budget = budget or TextBudget()

    def read(self, path: Path) -> list[Page]:
        """The rows of ``path`` as one :class:`Page`; raises a ``LoaderError`` if none."""
        data = read_bytes(path)
        text = text_of(data, path)
        meter = self.budget.meter(len(data), "CSV file", path)
        dialect = _sniff(text, path)
        reader = csv.reader(io.StringIO(text, newline=""), dialect)
        lines: list[str] = []
        try:
            header = _header(next(reader, []))
            for row in reader:
                line = _row_line(header, row, meter)
                if line:
                    if lines:
                        meter.add(1)  # the newline before it
                    lines.append(line)
        except csv.Error as exc:
            raise UnreadableFileError(
                f"not a valid CSV file: line {reader.line_num}: {exc}", path
            ) from exc
        if not lines:
            raise EmptyDocumentError("the CSV file has no rows of data under its header", path)
        return [Page(text="\n".join(lines), number=None)]


def _sniff(text: str, path: Path) -> type[csv.Dialect] | csv.Dialect:
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # a cut row would mislead the sniffer
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:
        # One column, or rows too irregular to tell: commas are the convention.
        logger.debug("%s: CSV dialect not recognised, reading it as comma-separated", path.name)
        return csv.excel
    # The sniffer says "doubled quotes" only if its sample shows a "" (the sample's size
    # decides it); RFC 4180 and every spreadsheet write a quote in a quoted field as "",
    # and without one in the file the setting changes nothing.
    dialect.doublequote = True
    logger.debug("%s: CSV delimiter %r", path.name, dialect.delimiter)
    return dialect


def _header(row: list[str]) -> list[str]:
    names = (_one_line(name) or f"column {i}" for i, name in enumerate(row, start=1))
    return [abbreviate_header(name) for name in names]


def abbreviate_header(name: str) -> str:
    """``name``, or its first :data:`MAX_HEADER_CHARS` characters ending in ``…``."""
    if len(name) <= MAX_HEADER_CHARS:
        return name
    return name[: MAX_HEADER_CHARS - 1].rstrip() + "…"


def _row_line(header: list[str], row: list[str], meter: TextMeter) -> str:
    """``"name: value; name: value"`` for the row's non-empty cells, counted on ``meter``."""
    pairs: list[str] = []
    for i, raw in enumerate(row):
        value = _one_line(raw)
        if not value:
            continue
        name = header[i] if i < len(header) else f"column {i + 1}"
        pair = f"{name}: {value}"
        # Counted pair by pair: one row of a million cells must not be built whole first.
        meter.add(len(pair) + (2 if pairs else 0))
        pairs.append(pair)
    return "; ".join(pairs)


class JsonReader:
    """Reads ``.json`` files: one line ``"path.to.key: value"`` per value, in file order.

    List items are written ``key[0]``; a key that holds a dot, a bracket or a space is quoted,
    ``parent["a.b"]``. Strings are written on one line, other values as JSON (``true``,
    ``null``, ``3.5``); an empty object or list is written ``{}`` or ``[]``. A key path longer
    than :data:`MAX_KEY_PATH_CHARS` keeps its tail (``…parent.child[3].key``). The walk is
    iterative, so depth is limited only by what the JSON parser accepts; a file whose lines
    would go past ``budget`` is refused as soon as they do.
    """

    extensions: tuple[str, ...] = (".json",)

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.budget = budget or TextBudget()

    def read(self, path: Path) -> list[Page]:
        """The values of ``path`` as one :class:`Page`; raises a ``LoaderError`` if none."""
        data = read_bytes(path)
        text = text_of(data, path)
        meter = self.budget.meter(len(data), "JSON file", path)
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UnreadableFileError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path
            ) from exc
        except RecursionError as exc:
            # The standard parser is recursive; a file nested this deep is not a document.
            raise UnreadableFileError("invalid JSON: nested too deeply to read", path) from exc
        except ValueError as exc:
            # Python refuses to convert integers of more digits than this (CVE-2020-10735).
            digits = sys.get_int_max_str_digits()
            raise UnreadableFileError(
                f"invalid JSON: a number has more than {digits} digits", path
            ) from exc
        lines: list[str] = []
        for line in _flatten_json(document):
            meter.add(len(line) + (1 if lines else 0))
            lines.append(line)
        if not lines:
            raise EmptyDocumentError("the JSON file holds no values", path)
        return [Page(text=without_surrogates("\n".join(lines)), number=None)]


def _flatten_json(document: Any) -> Iterator[str]:
    """Lines ``"path: value"`` for every value in ``document``, depth first, in order.

    A bare top-level value is written without a path; a top-level empty object, empty list,
    ``null`` or blank string yields nothing.
    """
    if _is_empty(document):
        return
    # A stack of iterators over (path, value) children: memory grows with the depth, not
    # with the width (a list of ten million numbers must not become ten million paths).
    stack: list[Iterator[tuple[str, Any]]] = [iter([("", document)])]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        path, value = child
        if isinstance(value, dict | list) and value:
            stack.append(_children(path, value))
        else:
            rendered = _render(value)
            yield f"{path}: {rendered}" if path else rendered


def _children(path: str, value: dict[str, Any] | list[Any]) -> Iterator[tuple[str, Any]]:
    """The (abbreviated path, value) of each item of a non-empty object or list, in order."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield _abbreviate_path(_child_path(path, str(key))), item
    else:
        for i, item in enumerate(value):
            yield _abbreviate_path(f"{path}[{i}]"), item


def _abbreviate_path(path: str) -> str:
    """``path`` cut to its last :data:`MAX_KEY_PATH_CHARS` characters after ``…``.

    The cut moves forward to the start of a key (after a ``.``, or at a ``[``) when one is
    in the first half of the tail, so ``…b.c`` rather than ``…ent.b.c``. Paths are
    abbreviated as they are built, so a parent's path is already short when its child's
    is made.
    """
    if len(path) <= MAX_KEY_PATH_CHARS:
        return path
    keep = MAX_KEY_PATH_CHARS - 1
    cut = len(path) - keep
    for at in range(cut - 1, cut + keep // 2):
        if path[at] == ".":
            cut = at + 1
            break
        if path[at] == "[" and at >= cut:
            cut = at
            break
    return "…" + path[cut:]


def _is_empty(value: Any) -> bool:
    if value is None or value in ({}, []):
        return True
    return isinstance(value, str) and not value.strip()


def _child_path(parent: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _render(value: Any) -> str:
    if isinstance(value, str):
        return _one_line(value) or '""'
    return json.dumps(value, ensure_ascii=False)
