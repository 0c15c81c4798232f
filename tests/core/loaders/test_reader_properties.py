"""Every built-in reader on generated files: pages within the budget, or a LoaderError.

Files are random bytes, random Unicode in the encodings files are saved in (byte-order
marks, NULs and UTF-8-encoded surrogates included), CSV tables and JSON documents of random
shapes, HTML from a small grammar and PDFs with random text. Whatever the input, a reader
returns pages whose text fits its budget and holds no lone surrogate (nor, once through
read_file, a NUL), or raises a LoaderError with a reason; never another exception. The CSV
and JSON readers also never expand a file more than their abbreviations allow (26.5 times
its size).
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ragloom.loaders import (
    CsvReader,
    FileReader,
    HtmlReader,
    JsonReader,
    LoaderError,
    PdfReader,
    TextBudget,
    TextReader,
    read_file,
)
from ragloom.loaders.tabular import MAX_HEADER_CHARS, MAX_KEY_PATH_CHARS
from ragloom.schema import Page
from ragloom.storable import storable_text
from tests.helpers.pdfs import make_pdf

_SETTINGS = settings(
    max_examples=120,
    deadline=5_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# A budget small enough that generated files cross it, to exercise refusals too.
_SMALL = TextBudget(ratio=1, max_chars=300, min_chars=20)
_BUDGETS = st.sampled_from([TextBudget(), _SMALL])
_SURROGATE = range(0xD800, 0xE000)


def _outcome(reader: FileReader, data: bytes, suffix: str, budget: TextBudget) -> str | None:
    """The pages' text (checked against ``budget``), or ``None`` if refused with a reason."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"file{suffix}"
        path.write_bytes(data)
        try:
            pages = reader.read(path)
        except LoaderError as exc:
            assert exc.reason and exc.reason.strip()
            event(f"refused: {type(exc).__name__}")
            return None
        # read_file checks what the reader gave again, as it does for plugins, and makes
        # each NUL (which PostgreSQL cannot store) U+FFFD.
        stored = read_file(path, {suffix: reader}, budget)
    assert stored == [Page(text=storable_text(p.text), number=p.number) for p in pages]
    assert pages and all(page.text.strip() for page in pages)
    text = "".join(page.text for page in pages)
    assert len(text) <= budget.limit_for(len(data))
    assert not any(ord(char) in _SURROGATE for char in text)
    assert not any("\x00" in page.text for page in stored)
    event("read")
    return text


_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=200) | st.sampled_from(
    ["\x00", "\ufeff", "\ufeffhello", "a\x00b", "\u202eevil\u202c", " \n\t "]
)
_encodings = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32", "cp1252", "gb18030"])


@st.composite
def _encoded_texts(draw: st.DrawFn) -> bytes:
    text = draw(_texts)
    encoding = draw(_encodings)
    # "surrogatepass" writes lone surrogates as the bytes no decoder accepts.
    errors = draw(st.sampled_from(["surrogatepass", "replace"])) if "utf" in encoding else "replace"
    try:
        return text.encode(encoding, errors)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


_files = st.binary(max_size=2_000) | _encoded_texts()


@_SETTINGS
@given(data=_files, budget=_BUDGETS)
def test_text_reader(data: bytes, budget: TextBudget) -> None:
    text = _outcome(TextReader(budget), data, ".txt", budget)
    assert text is None or len(text) <= len(data)


_cells = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12) | (
    st.sampled_from(["", "1", ",", ";", '"', "\n", "a b", "x" * 80])
)


@st.composite
def _csv_files(draw: st.DrawFn) -> bytes:
    width = draw(st.integers(1, 8))
    header = draw(st.lists(_cells | st.just("long header " * 9), min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(_cells, max_size=width + 2), max_size=30))
    delimiter = draw(st.sampled_from([",", ";", "\t", "|"]))
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter).writerows([header, *rows])
    return buffer.getvalue().encode(draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16"])))


@st.composite
def _amplifying_csv_files(draw: st.DrawFn) -> bytes:
    """Long headers over many rows of one-character values: the shape that amplifies most."""
    width = draw(st.integers(1, 5))
    header = [draw(st.sampled_from("abc")) * draw(st.integers(1, 300)) for _ in range(width)]
    row = ",".join(draw(st.sampled_from(["1", "", "x"])) for _ in range(width))
    return "\n".join([",".join(header)] + [row] * draw(st.integers(1, 400))).encode()


@_SETTINGS
@given(data=_csv_files() | _amplifying_csv_files() | _files, budget=_BUDGETS)
def test_csv_reader(data: bytes, budget: TextBudget) -> None:
    text = _outcome(CsvReader(budget), data, ".csv", budget)
    if text is not None:
        assert len(text) <= (MAX_HEADER_CHARS + 5) / 2 * len(data)


_any_characters = st.characters(codec=None, exclude_categories=())  # lone surrogates too
_json_keys = st.text(_any_characters, max_size=10) | st.sampled_from(
    ["a.b", "[0]", "", " ", "k" * 70]
)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(_any_characters, max_size=20)
)
_json_documents = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(_json_keys, children, max_size=6)
    ),
    max_leaves=60,
)


@st.composite
def _json_files(draw: st.DrawFn) -> bytes:
    document: Any = draw(_json_documents)
    indent = draw(st.sampled_from([None, 2]))
    # ensure_ascii writes lone surrogates as \\udxxx escapes, which the reader must repair.
    return json.dumps(document, indent=indent, ensure_ascii=True).encode()


@_SETTINGS
@given(data=_json_files() | _files, budget=_BUDGETS)
def test_json_reader(data: bytes, budget: TextBudget) -> None:
    text = _outcome(JsonReader(budget), data, ".json", budget)
    if text is not None:
        assert len(text) <= (MAX_KEY_PATH_CHARS + 5) / 2 * len(data)


_html_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20) | (
    st.sampled_from(["&amp;", "&nbsp;", "&#xD800;", "&bogus;", "<", ">", "&#0;", "\x00"])
)
_tags = st.sampled_from(
    ["p", "div", "br", "li", "ul", "table", "tr", "td", "pre", "script", "title", "head", "b"]
)
_html = st.recursive(
    _html_text,
    lambda inner: st.builds(
        lambda tag, parts, closed: f"<{tag}>{''.join(parts)}" + (f"</{tag}>" if closed else ""),
        _tags,
        st.lists(inner, max_size=4),
        st.booleans(),
    ),
    max_leaves=40,
)


@_SETTINGS
@given(
    data=_html.map(lambda markup: markup.encode()) | _files,
    budget=_BUDGETS,
    max_elements=st.sampled_from([250_000, 5]),
)
def test_html_reader(data: bytes, budget: TextBudget, max_elements: int) -> None:
    _outcome(HtmlReader(budget, max_elements), data, ".html", budget)


_pdf_pages = st.lists(
    st.none() | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=300),
    min_size=1,
    max_size=4,
)


@st.composite
def _pdf_files(draw: st.DrawFn) -> bytes:
    data = bytearray(make_pdf(draw(_pdf_pages)))
    # Damage some bytes: pypdf must fail with a reason, or read what it can.
    for _ in range(draw(st.integers(0, 3))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@_SETTINGS
@given(data=_pdf_files() | _files.map(lambda rest: b"%PDF-1.4\n" + rest), budget=_BUDGETS)
def test_pdf_reader(data: bytes, budget: TextBudget) -> None:
    _outcome(PdfReader(budget), data, ".pdf", budget)


@pytest.mark.parametrize("pages", [["Hello PDF"], [None, "Second page (with parentheses)"]])
def test_an_undamaged_generated_pdf_reads_back(tmp_path: Path, pages: list[str | None]) -> None:
    path = tmp_path / "file.pdf"
    path.write_bytes(make_pdf(pages))
    assert [page.text for page in PdfReader().read(path)] == [page for page in pages if page]
