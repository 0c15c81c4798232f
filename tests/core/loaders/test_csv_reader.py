"""CsvReader: sniffed dialects, a header naming every value, legacy encodings, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.loaders import (
    CsvReader,
    EmptyDocumentError,
    FileBudgetError,
    TextBudget,
    UnreadableFileError,
)
from ragloom.loaders.tabular import MAX_HEADER_CHARS
from ragloom.schema import Page


def _read(tmp_path: Path, data: bytes | str, name: str = "table.csv") -> str:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    pages = CsvReader().read(path)
    assert len(pages) == 1
    assert pages[0].number is None
    return pages[0].text


def test_comma_separated_with_quoted_fields(tmp_path: Path) -> None:
    table = (
        "city,population,note\n"
        'Paris,2102650,"capital, largest city"\n'
        '"New York",8258035,"multi\nline  note"\n'
    )
    assert _read(tmp_path, table) == (
        "city: Paris; population: 2102650; note: capital, largest city\n"
        "city: New York; population: 8258035; note: multi line note"
    )


def test_semicolon_dialect_in_cp1252(tmp_path: Path) -> None:
    # Excel in a French locale: semicolons, decimal commas, windows-1252, CRLF.
    table = (
        "Produit;Prix;Catégorie\r\n"
        "Crème brûlée;5,50 €;Dessert\r\n"
        "Café crème;2,80 €;Boisson\r\n"
        "Thé;2,00 €;Boisson\r\n"
    )
    assert _read(tmp_path, table.encode("cp1252")) == (
        "Produit: Crème brûlée; Prix: 5,50 €; Catégorie: Dessert\n"
        "Produit: Café crème; Prix: 2,80 €; Catégorie: Boisson\n"
        "Produit: Thé; Prix: 2,00 €; Catégorie: Boisson"
    )


def test_tab_separated(tmp_path: Path) -> None:
    table = "id\tname\n1\tAnn Lee\n2\tBo, Jr.\n"
    assert _read(tmp_path, table) == "id: 1; name: Ann Lee\nid: 2; name: Bo, Jr."


def test_empty_cells_blank_rows_and_ragged_rows(tmp_path: Path) -> None:
    table = "a,b,\n1,,3\n\n,,\n4,5,6,7\n8\n"
    assert _read(tmp_path, table) == (
        "a: 1; column 3: 3\na: 4; b: 5; column 3: 6; column 4: 7\na: 8"
    )


def test_single_column_falls_back_to_commas(tmp_path: Path) -> None:
    assert _read(tmp_path, "word\nalpha\nbeta\n") == "word: alpha\nword: beta"


def test_chinese_utf8_with_bom(tmp_path: Path) -> None:
    table = "\ufeff城市,人口\n北京,2189万\n上海,2487万\n"
    assert _read(tmp_path, table) == "城市: 北京; 人口: 2189万\n城市: 上海; 人口: 2487万"


def test_header_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("a,b,c\n\n")
    with pytest.raises(EmptyDocumentError) as info:
        CsvReader().read(path)
    assert info.value.reason == "the CSV file has no rows of data under its header"


@pytest.mark.parametrize(("data", "reason"), [(b"", "the file is empty"), (b" \n\n", "only")])
def test_empty_files(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "empty.csv"
    path.write_bytes(data)
    with pytest.raises(EmptyDocumentError) as info:
        CsvReader().read(path)
    assert reason in info.value.reason


def test_field_over_the_csv_module_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    path.write_text('a,b\n1,"' + "x" * 200_000 + '"\n')
    with pytest.raises(UnreadableFileError) as info:
        CsvReader().read(path)
    assert (
        info.value.reason == "not a valid CSV file: line 2: field larger than field limit (131072)"
    )


def test_binary_file_named_csv(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 8)  # an .xlsx renamed
    with pytest.raises(UnreadableFileError) as info:
        CsvReader().read(path)
    assert info.value.reason == "binary content, not text"


def test_many_rows(tmp_path: Path) -> None:
    rows = "".join(f"{i},item {i}\n" for i in range(20_000))
    text = _read(tmp_path, "n,label\n" + rows)
    lines = text.split("\n")
    assert len(lines) == 20_000
    assert lines[-1] == "n: 19999; label: item 19999"
    assert CsvReader().read(tmp_path / "table.csv") == [Page(text=text, number=None)]


def test_long_headers_are_abbreviated(tmp_path: Path) -> None:
    question = "How satisfied were you with the speed of our delivery service this quarter?"
    text = _read(tmp_path, f"id,{question}\n1,4\n2,5\n")
    shown = "How satisfied were you with the speed of our de…"
    assert len(shown) == MAX_HEADER_CHARS
    assert text == f"id: 1; {shown}: 4\nid: 2; {shown}: 5"


def test_an_honest_wide_table_fits_the_default_budget(tmp_path: Path) -> None:
    # A survey: 40 long questions answered 1-5, the most a real table expands (22 times).
    questions = [f"Q{i}. How satisfied were you with part {i} of our service?" for i in range(40)]
    rows = [",".join(["id", *questions])]
    rows += [",".join([str(r)] + [str(1 + (r + q) % 5) for q in range(40)]) for r in range(500)]
    data = "\n".join(rows) + "\n"
    text = _read(tmp_path, data)
    assert 20 < len(text) / len(data) < TextBudget().ratio


def test_a_file_past_its_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("a_long_column_name,another_long_name\n" + "1,2\n" * 1_000)
    budget = TextBudget(ratio=5, min_chars=0)
    with pytest.raises(FileBudgetError) as info:
        CsvReader(budget).read(path)
    assert info.value.reason == (
        "the CSV file would expand to more than 20,185 characters of text, over 5 times its "
        "size (3.9 KB); the limit is 5 times the file's size"
    )
    assert info.value.limit == 20_185
    # The same file under the default budget: 11 times its size.
    assert (
        len(CsvReader().read(path)[0].text)
        == 1_000 * len("a_long_column_name: 1; another_long_name: 2\n") - 1
    )


def test_doubled_quotes_past_the_sniffed_sample(tmp_path: Path) -> None:
    # The sniffer sees the first 4 KiB, without a "" in them; the row after still reads
    # the RFC 4180 way.
    rows = "".join(f'{i},"plain note {i}"\n' for i in range(300))
    text = _read(tmp_path, "n,note\n" + rows + '300,"the ""quoted"" word"\n')
    assert text.split("\n")[-1] == 'n: 300; note: the "quoted" word'
