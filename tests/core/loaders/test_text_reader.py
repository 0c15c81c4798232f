"""TextReader on real files written in several encodings, and on files it must refuse."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ragloom.loaders import (
    EmptyDocumentError,
    FileBudgetError,
    TextBudget,
    TextReader,
    UnreadableFileError,
    decode_text,
)
from ragloom.schema import Page


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("utf-8", "Hello wörld — ✓ 你好"),
        ("utf-8-sig", "Text with a byte-order mark: café"),
        ("cp1252", "café naïve"),
        ("cp1252", "Le café était très élégant."),  # mac_latin2 scores less chaos
        ("cp1252", "Le café était très élégant. Ça coûte 5 €."),
        ("latin-1", "Grüße aus Köln"),
        ("gb18030", "中文文本测试。你好！这是一个测试文件。"),
        ("gb18030", "你好"),
        ("utf-16", "UTF-16 with its mark: 日本語"),
    ],
)
def test_decodes_encodings(tmp_path: Path, encoding: str, text: str) -> None:
    path = _write(tmp_path, "doc.txt", text.encode(encoding))
    assert TextReader().read(path) == [Page(text=text, number=None)]


def test_bom_is_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path, "bom.md", codecs.BOM_UTF8 + b"# Title")
    assert TextReader().read(path)[0].text == "# Title"


def test_newlines_are_normalised(tmp_path: Path) -> None:
    path = _write(tmp_path, "crlf.txt", b"one\r\ntwo\rthree\n\r\nfour")
    assert TextReader().read(path)[0].text == "one\ntwo\nthree\n\nfour"


def test_markdown_is_kept_verbatim(tmp_path: Path) -> None:
    text = "# Heading\n\n- item *one*\n- item `two`\n"
    path = _write(tmp_path, "notes.markdown", text.encode())
    assert TextReader().read(path)[0].text == text


def test_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "empty.txt", b"")
    with pytest.raises(EmptyDocumentError) as info:
        TextReader().read(path)
    assert info.value.reason == "the file is empty"
    assert info.value.path == path
    assert str(info.value) == "empty.txt: the file is empty"


def test_whitespace_only_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "blank.txt", b" \n\t\r\n  \n")
    with pytest.raises(EmptyDocumentError) as info:
        TextReader().read(path)
    assert "whitespace" in info.value.reason


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,  # an image
        bytes(range(256)) * 8,  # every byte value, NULs included
        bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 17, 18, 19, 20]) * 50,  # controls, no NUL
    ],
)
def test_binary_content_is_refused(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, "photo.txt", data)
    with pytest.raises(UnreadableFileError) as info:
        TextReader().read(path)
    assert info.value.reason == "binary content, not text"


def test_a_few_control_characters_are_text(tmp_path: Path) -> None:
    text = "a log line with an escape \x1b[1mbold\x1b[0m and a bell \x07 " + "word " * 100
    path = _write(tmp_path, "log.txt", text.encode())
    assert TextReader().read(path)[0].text == text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        TextReader().read(tmp_path / "gone.txt")
    assert info.value.reason.startswith("cannot read the file")


def test_a_file_past_the_most_text_a_file_may_give(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 300)
    with pytest.raises(FileBudgetError) as info:
        TextReader(TextBudget(max_chars=1_000, min_chars=0)).read(path)
    assert info.value.reason == (
        "the text file would expand to more than 1,000 characters of text from 1.5 KB; "
        "the limit is 1,000 characters per file"
    )


@pytest.mark.parametrize(
    "label", ["utf-7", "UTF_7", "unicode_escape", "raw-unicode-escape", "undefined", "idna", "hex"]
)
def test_a_declared_codec_that_is_no_charset_is_passed_over(label: str) -> None:
    # Each would give lone surrogates, raise UnicodeError, or is no text encoding at all.
    assert decode_text(b"a +2AA- \\ud800 b", encoding=label) == "a +2AA- \\ud800 b"
