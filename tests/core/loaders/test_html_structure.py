"""HtmlReader keeps what answers technical questions: code lines, headings with their block,
terms with their definitions, table rows with their headers; and the chunks keep them too."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.loaders import FileBudgetError, HtmlReader, TextBudget
from ragloom.loaders.tabular import MAX_HEADER_CHARS
from ragloom.splitters import TokenSplitter


def _read(tmp_path: Path, body: str, budget: TextBudget | None = None) -> str:
    path = tmp_path / "page.html"
    path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    (page,) = HtmlReader(budget).read(path)
    return page.text


def test_a_signature_block_keeps_its_lines_and_its_heading(tmp_path: Path) -> None:
    body = """<h2>Pseudo-Random Number Generator</h2>
<pre>
void sqlite3_randomness(
  int N,      /* bytes */
  void *P
);
</pre>
<p>A call to this routine stores N bytes of randomness into buffer P.</p>"""
    assert _read(tmp_path, body) == (
        "Pseudo-Random Number Generator\n"
        "void sqlite3_randomness(\n"
        "  int N,      /* bytes */\n"
        "  void *P\n"
        ");\n\n"
        "A call to this routine stores N bytes of randomness into buffer P."
    )


def test_nested_headings_make_a_section_path_before_the_first_block(tmp_path: Path) -> None:
    body = """<h1>PRAGMA Statements</h1><h2>PRAGMA cache_size</h2>
<p>The default suggested cache size is -2000.</p><p>Another paragraph.</p><h2>Last</h2>"""
    assert _read(tmp_path, body) == (
        "PRAGMA Statements\nPRAGMA cache_size\nThe default suggested cache size is -2000.\n\n"
        "Another paragraph.\n\nLast"
    )


def test_a_heading_before_a_list_ends_with_the_list(tmp_path: Path) -> None:
    body = "<h3>Options</h3><ul><li>one</li><li>two</li></ul><p>After.</p>"
    assert _read(tmp_path, body) == "Options\none\ntwo\n\nAfter."


def test_each_term_and_its_description_make_one_paragraph(tmp_path: Path) -> None:
    body = """<dl>
<dt><b>SQLITE_CONFIG_SINGLETHREAD</b></dt>
<dd><p>There are no arguments to this option.</p><p>It sets single-thread mode.</p></dd>
<dt>SQLITE_CONFIG_SERIALIZED</dt><dd>Serialized mode. <pre>int x;</pre></dd>
</dl><p>After.</p>"""
    assert _read(tmp_path, body) == (
        "SQLITE_CONFIG_SINGLETHREAD\n"
        "There are no arguments to this option.\n"
        "It sets single-thread mode.\n\n"
        "SQLITE_CONFIG_SERIALIZED\n"
        "Serialized mode.\n"
        "int x;\n\n"
        "After."
    )


def test_table_rows_carry_their_headers(tmp_path: Path) -> None:
    body = """<table><caption>Limits</caption>
<tr><th>Name</th><th>Default</th><th>Notes</th></tr>
<tr><td>SQLITE_MAX_LENGTH</td><td>1,000,000,000</td><td></td></tr>
<tr><td>SQLITE_MAX_COLUMN</td><td><p>2000</p></td><td>per <i>table</i><br>and index</td>
<td>extra</td></tr>
</table><p>After.</p>"""
    assert _read(tmp_path, body) == (
        "Limits\n"
        "Name: SQLITE_MAX_LENGTH; Default: 1,000,000,000\n"
        "Name: SQLITE_MAX_COLUMN; Default: 2000; Notes: per table and index; column 4: extra\n\n"
        "After."
    )


def test_a_table_of_headers_alone_keeps_them(tmp_path: Path) -> None:
    assert _read(tmp_path, "<table><tr><th>A</th><th>B</th></tr></table>") == "A | B"


def test_a_nested_table_is_text_of_its_cell(tmp_path: Path) -> None:
    body = """<table><tr><th>Key</th><th>Value</th></tr>
<tr><td>k</td><td><table><tr><td>x</td><td>y</td></tr></table></td></tr></table>"""
    assert _read(tmp_path, body) == "Key: k; Value: x y"


def test_long_headers_are_cut_like_csv_headers(tmp_path: Path) -> None:
    long = "How satisfied were you with the speed of our delivery service overall"
    body = f"<table><tr><th>{long}</th></tr><tr><td>4</td></tr></table>"
    header, value = _read(tmp_path, body).rsplit(": ", 1)
    assert len(header) == MAX_HEADER_CHARS and header.endswith("…") and value == "4"


def test_headers_repeated_on_every_row_count_against_the_budget(tmp_path: Path) -> None:
    # 3,000 rows of one short cell under a 48-character header: the file is small, its
    # text is not; the budget refuses it as the CSV reader would.
    header = "h" * MAX_HEADER_CHARS
    rows = "".join("<tr><td>1</td></tr>" for _ in range(3000))
    body = f"<table><tr><th>{header}</th></tr>{rows}</table>"
    with pytest.raises(FileBudgetError, match="the limit is 2 times the file's size"):
        _read(tmp_path, body, TextBudget(ratio=2, min_chars=100))


def test_chunks_keep_a_term_with_its_definition_and_code_with_its_heading(
    tmp_path: Path,
) -> None:
    filler = "".join(f"<p>Filler sentence number {i} about nothing.</p>" for i in range(40))
    body = (
        f"{filler}<dl><dt>cache_size</dt><dd>The default suggested cache size is -2000 "
        "pages of memory for each open database file.</dd></dl>"
        f"{filler}<h3>Signature</h3><pre>int sqlite3_open(\n  const char *filename\n);</pre>"
    )
    path = tmp_path / "page.html"
    path.write_text(f"<body>{body}</body>", encoding="utf-8")
    chunks = TokenSplitter(chunk_size=60, chunk_overlap=0)(
        HtmlReader().read(path), source_id="s", source_name="page.html"
    )
    term = [c.text for c in chunks if "cache_size" in c.text]
    assert term and all("-2000" in text for text in term)
    code = [c.text for c in chunks if "sqlite3_open(" in c.text]
    assert code and all("Signature\nint sqlite3_open(\n  const char" in text for text in code)
