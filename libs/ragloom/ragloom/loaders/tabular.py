"""CSV and JSON files, written out as self-describing lines of text.

A chunk of a table is only useful to the LLM if it says what its values are, so every line
names its fields: a CSV row becomes ``"header1: value1; header2: value2"`` and a JSON value
``"path.to.key: value"``. The splitter packs those lines into chunks.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragloom.loaders.base import EmptyDocumentError, UnreadableFileError
from ragloom.loaders.text import read_text
from ragloom.schema import Page

__all__ = ["CsvReader", "JsonReader"]

logger = logging.getLogger(__name__)

# The sniffer sees the first rows only; guessing among the delimiters spreadsheets actually
# write keeps it from choosing a letter that happens to repeat in every line.
_SNIFF_CHARS = 64 * 1024
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
    row's line, and blank rows are skipped.
    """

    extensions: tuple[str, ...] = (".csv",)

    def read(self, path: Path) -> list[Page]:
        """The rows of ``path`` as one :class:`Page`; raises a ``LoaderError`` if none."""
        text = read_text(path)
        dialect = _sniff(text, path)
        reader = csv.reader(io.StringIO(text, newline=""), dialect)
        lines: list[str] = []
        try:
            header = _header(next(reader, []))
            for row in reader:
                line = _row_line(header, row)
                if line:
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
    logger.debug("%s: CSV delimiter %r", path.name, dialect.delimiter)
    return dialect


def _header(row: list[str]) -> list[str]:
    return [_one_line(name) or f"column {i}" for i, name in enumerate(row, start=1)]


def _row_line(header: list[str], row: list[str]) -> str:
    pairs: list[str] = []
    for i, raw in enumerate(row):
        value = _one_line(raw)
        if not value:
            continue
        name = header[i] if i < len(header) else f"column {i + 1}"
        pairs.append(f"{name}: {value}")
    return "; ".join(pairs)


class JsonReader:
    """Reads ``.json`` files: one line ``"path.to.key: value"`` per value, in file order.

    List items are written ``key[0]``; a key that holds a dot, a bracket or a space is quoted,
    ``parent["a.b"]``. Strings are written on one line, other values as JSON (``true``,
    ``null``, ``3.5``); an empty object or list is written ``{}`` or ``[]``. The walk is
    iterative, so depth is limited only by what the JSON parser accepts.
    """

    extensions: tuple[str, ...] = (".json",)

    def read(self, path: Path) -> list[Page]:
        """The values of ``path`` as one :class:`Page`; raises a ``LoaderError`` if none."""
        text = read_text(path)
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UnreadableFileError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path
            ) from exc
        except RecursionError as exc:
            # The standard parser is recursive; a file nested this deep is not a document.
            raise UnreadableFileError("invalid JSON: nested too deeply to read", path) from exc
        lines = list(_flatten_json(document))
        if not lines:
            raise EmptyDocumentError("the JSON file holds no values", path)
        return [Page(text="\n".join(lines), number=None)]


def _flatten_json(document: Any) -> Iterator[str]:
    """Lines ``"path: value"`` for every value in ``document``, depth first, in order.

    A bare top-level value is written without a path; a top-level empty object, empty list,
    ``null`` or blank string yields nothing.
    """
    if _is_empty(document):
        return
    # (path, value) pairs; children are pushed in reverse so they pop in document order.
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict) and value:
            stack.extend((_child_path(path, str(k)), v) for k, v in reversed(value.items()))
        elif isinstance(value, list) and value:
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        else:
            rendered = _render(value)
            yield f"{path}: {rendered}" if path else rendered


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
