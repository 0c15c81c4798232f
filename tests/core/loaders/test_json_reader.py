"""JsonReader: values flattened to "path: value" lines in order, bad JSON, deep and big files."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from ragloom.loaders import (
    EmptyDocumentError,
    FileBudgetError,
    JsonReader,
    TextBudget,
    UnreadableFileError,
)
from ragloom.loaders.tabular import MAX_KEY_PATH_CHARS
from ragloom.schema import Page


def _read(tmp_path: Path, data: bytes | str, name: str = "data.json") -> str:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    pages = JsonReader().read(path)
    assert len(pages) == 1
    assert pages[0].number is None
    return pages[0].text


def test_nested_objects_and_lists_keep_their_order(tmp_path: Path) -> None:
    document = """{
      "zeta": "first key, not sorted",
      "company": {
        "name": "Acme",
        "founded": 1999,
        "public": false,
        "ceo": null,
        "offices": [
          {"city": "Paris", "staff": 120},
          {"city": "北京", "staff": 3.5e2}
        ],
        "tags": ["b2b", "saas"],
        "empty": {},
        "none": []
      }
    }"""
    assert _read(tmp_path, document) == (
        "zeta: first key, not sorted\n"
        "company.name: Acme\n"
        "company.founded: 1999\n"
        "company.public: false\n"
        "company.ceo: null\n"
        "company.offices[0].city: Paris\n"
        "company.offices[0].staff: 120\n"
        "company.offices[1].city: 北京\n"
        "company.offices[1].staff: 350.0\n"
        "company.tags[0]: b2b\n"
        "company.tags[1]: saas\n"
        "company.empty: {}\n"
        "company.none: []"
    )


def test_top_level_list_and_awkward_keys(tmp_path: Path) -> None:
    document = [
        {"first name": "Ann", "a.b": 1, "": "blank key", "note": "two\nlines  here"},
        [1, [2]],
        "",
    ]
    assert _read(tmp_path, json.dumps(document)) == (
        '[0]["first name"]: Ann\n'
        '[0]["a.b"]: 1\n'
        '[0][""]: blank key\n'
        "[0].note: two lines here\n"
        "[1][0]: 1\n"
        "[1][1][0]: 2\n"
        '[2]: ""'
    )


def test_top_level_scalar(tmp_path: Path) -> None:
    assert _read(tmp_path, '"just a sentence"') == "just a sentence"
    assert _read(tmp_path, "42") == "42"


def test_utf8_with_byte_order_mark(tmp_path: Path) -> None:
    data = codecs.BOM_UTF8 + json.dumps({"名前": "太郎"}, ensure_ascii=False).encode()
    assert _read(tmp_path, data) == "名前: 太郎"


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": oops\n}\n')
    with pytest.raises(UnreadableFileError) as info:
        JsonReader().read(path)
    assert info.value.reason == "invalid JSON at line 3, column 8: Expecting value"
    assert info.value.path == path


def test_nesting_deeper_than_the_parser_accepts(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UnreadableFileError) as info:
        JsonReader().read(path)
    assert info.value.reason == "invalid JSON: nested too deeply to read"


def test_deep_document_is_flattened_without_recursion(tmp_path: Path) -> None:
    depth = 900  # deeper than a recursive flattener could go within the recursion limit
    text = _read(tmp_path, '{"k":' * depth + '"bottom"' + "}" * depth)
    # The 1,799-character path keeps its last 24 keys.
    assert text == "…" + ".".join(["k"] * 24) + ": bottom"


def test_big_document(tmp_path: Path) -> None:
    document = {"rows": [{"id": i, "label": f"item {i}"} for i in range(50_000)]}
    text = _read(tmp_path, json.dumps(document))
    lines = text.split("\n")
    assert len(lines) == 100_000
    assert lines[:2] == ["rows[0].id: 0", "rows[0].label: item 0"]
    assert lines[-1] == "rows[49999].label: item 49999"


@pytest.mark.parametrize("data", ["{}", "[]", "null", '"   "'])
def test_no_values(tmp_path: Path, data: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(data)
    with pytest.raises(EmptyDocumentError) as info:
        JsonReader().read(path)
    assert info.value.reason == "the JSON file holds no values"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        JsonReader().read(path)
    assert info.value.reason == "the file is empty"


def test_page(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"a": [true]}')
    assert JsonReader().read(path) == [Page(text="a[0]: true", number=None)]


def test_long_key_paths_keep_their_tail_from_a_key(tmp_path: Path) -> None:
    members = [{"name": "Ann"}, {"name": "Bo"}]
    document = {"organisation": {"departments": {"engineering": {"teams": [{"members": members}]}}}}
    # The full paths ("organisation.departments.engineering.teams[0].members[0].name") are
    # 61 characters; the cut moves to the next key rather than keep "…tments.".
    assert _read(tmp_path, json.dumps(document)) == (
        "…engineering.teams[0].members[0].name: Ann\n…engineering.teams[0].members[1].name: Bo"
    )


def test_a_single_long_key_is_cut_by_characters(tmp_path: Path) -> None:
    key = "k" * 30 + "y" * 70
    text = _read(tmp_path, json.dumps({key: [1, 2]}))
    assert text == f"…{'y' * 44}[0]: 1\n…{'y' * 44}[1]: 2"
    assert all(len(line.split(": ")[0]) == MAX_KEY_PATH_CHARS for line in text.split("\n"))


def test_a_number_with_too_many_digits(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"n": ' + "9" * 5_000 + "}")
    with pytest.raises(UnreadableFileError) as info:
        JsonReader().read(path)
    assert info.value.reason == "invalid JSON: a number has more than 4300 digits"


def test_lone_surrogates_become_replacement_characters(tmp_path: Path) -> None:
    assert _read(tmp_path, r'{"k\ud800": "v\udfff w", "pair": "\ud83d\ude00"}') == (
        "k\ufffd: v\ufffd w\npair: 😀"
    )


def test_a_file_past_its_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps({"a" * 40: list(range(1_000))}))  # 4,936 bytes
    with pytest.raises(FileBudgetError) as info:
        JsonReader(TextBudget(ratio=4, min_chars=0)).read(path)
    assert info.value.reason == (
        "the JSON file would expand to more than 19,744 characters of text, over 4 times its "
        "size (4.8 KB); the limit is 4 times the file's size"
    )
    lines = JsonReader().read(path)[0].text.split("\n")  # 10 times its size: within the default
    assert lines == ["a" * 40 + f"[{i}]: {i}" for i in range(1_000)]
