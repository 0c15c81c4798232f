"""HtmlReader on pages written here: visible text only, paragraphs, declared charsets."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ragloom.loaders import (
    EmptyDocumentError,
    FileBudgetError,
    HtmlReader,
    TextBudget,
    UnreadableFileError,
)
from ragloom.loaders.html import MAX_HTML_ELEMENTS
from ragloom.schema import Page


def _read(tmp_path: Path, data: bytes | str, name: str = "page.html") -> str:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    pages = HtmlReader().read(path)
    assert len(pages) == 1
    assert pages[0].number is None
    return pages[0].text


def test_visible_text_in_paragraphs(tmp_path: Path) -> None:
    page = """<!DOCTYPE html>
<html><head>
  <title>  Quarterly   report </title>
  <meta name="description" content="meta text">
  <style>p { color: red } .secret { display: none }</style>
  <script>var secret = "script text";</script>
</head>
<body>
  <!-- a comment -->
  <script type="application/ld+json">{"also": "script text"}</script>
  <h1>Results</h1>
  <p>Sales   grew
     by <b>12</b>%&nbsp;this&amp;that.</p>
  <div>First block</div><div>Second <span>block</span></div>
  <noscript>Please enable JavaScript</noscript>
  <template><p>template text</p></template>
  <p hidden>hidden text</p>
  <p>Line one<br>Line two</p>
</body></html>"""
    text = _read(tmp_path, page)
    assert text == (
        "Quarterly report\n\n"
        "Results\n"  # a heading starts the paragraph of what follows it
        "Sales grew by 12% this&that.\n\n"
        "First block\n\n"
        "Second block\n\n"
        "Line one\nLine two"
    )
    for hidden in ("script text", "meta text", "color", "comment", "JavaScript", "template"):
        assert hidden not in text


def test_lists_and_tables_are_lines_of_one_paragraph(tmp_path: Path) -> None:
    page = """<body><p>Before</p>
<ul><li>apples</li><li>pears
</li></ul>
<table><tr><td>Ann</td><td>30</td></tr><tr><td>Bo</td><td>41</td></tr></table>
<p>After</p></body>"""
    assert _read(tmp_path, page) == ("Before\n\napples\npears\n\nAnn | 30\nBo | 41\n\nAfter")


def test_preformatted_text_keeps_its_lines_and_indentation(tmp_path: Path) -> None:
    page = "<body><p>Code:</p><pre>def f():\n    return 1   \n\n</pre><p>End</p></body>"
    assert _read(tmp_path, page) == "Code:\n\ndef f():\n    return 1\n\nEnd"


def test_declared_latin1_is_read_as_windows_1252(tmp_path: Path) -> None:
    # Browsers read "iso-8859-1" pages as windows-1252: 0x80 is the euro sign there.
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        "<title>Caf\xe9</title></head><body><p>Un caf\xe9 co\xfbte 2 \x80 \x96 \xe0 Paris.</p>"
        "</body></html>"
    ).encode("latin-1")
    assert _read(tmp_path, page) == "Café\n\nUn café coûte 2 € – à Paris."


def test_declared_meta_charset(tmp_path: Path) -> None:
    page = '<meta charset="windows-1252"><p>Grüße aus Köln, “quoted”</p>'.encode("cp1252")
    assert _read(tmp_path, page) == "Grüße aus Köln, “quoted”"


def test_declared_gbk_page(tmp_path: Path) -> None:
    page = '<head><meta charset="gbk"><title>中文</title></head><p>你好，世界。</p>'
    assert _read(tmp_path, page.encode("gbk")) == "中文\n\n你好，世界。"


def test_undeclared_utf8(tmp_path: Path) -> None:
    assert _read(tmp_path, "<p>日本語のテキスト</p><p>naïve</p>") == "日本語のテキスト\n\nnaïve"


def test_wrong_declaration_falls_back_to_detection(tmp_path: Path) -> None:
    # Saved as cp1252 although the page claims UTF-8: the bytes do not decode as UTF-8.
    page = '<meta charset="utf-8"><p>Le café était très élégant.</p>'.encode("cp1252")
    assert _read(tmp_path, page) == "Le café était très élégant."


def test_byte_order_mark_wins_over_the_declaration(tmp_path: Path) -> None:
    page = codecs.BOM_UTF8 + '<meta charset="iso-8859-1"><p>ünïcödé</p>'.encode()
    assert _read(tmp_path, page) == "ünïcödé"


@pytest.mark.parametrize(
    "charset",
    [
        "undefined",  # decoding raised UnicodeError, which nothing caught
        "utf-7",  # "+2AA-" decoded to a lone surrogate, which lxml's feed refused
        "UTF7",
        "unicode_escape",  # "\\ud800" in the page became one
        "raw_unicode_escape",
        "idna",
        "punycode",
        "base64",  # not a text encoding at all
        "rot13",
        "x-no-such-charset",
    ],
)
def test_a_charset_that_is_no_text_encoding_falls_back_to_detection(
    tmp_path: Path, charset: str
) -> None:
    # ASCII bytes, which most of these codecs would take: only the label can refuse them.
    page = (
        f'<html><head><meta charset="{charset}"><title>T</title></head>'
        "<body><p>Hello +2AA- \\ud800 \\x00 world</p></body></html>"
    )
    assert _read(tmp_path, page.encode()) == "T\n\nHello +2AA- \\ud800 \\x00 world"


@pytest.mark.parametrize("extra", [0, 1])  # 0: a length that decodes as UTF-16 and UTF-32
@pytest.mark.parametrize("charset", ["utf-16", "utf_16", "UTF16", "u16", "utf_32_be", "utf-16le"])
def test_a_utf16_or_utf32_declaration_in_ascii_bytes_is_read_as_utf8(
    tmp_path: Path, charset: str, extra: int
) -> None:
    # Any spelling Python accepts: "utf_16" passed the guard and the page became Chinese.
    page = f'<meta charset="{charset}"><p>Hello world</p>'
    page += " " * (-len(page) % 4 + extra)
    assert _read(tmp_path, page.encode()) == "Hello world"


@pytest.mark.parametrize("charset", ["latin1", "ISO_8859_1", "l1", "us-ascii", "ascii"])
def test_every_spelling_of_latin1_is_read_as_windows_1252(tmp_path: Path, charset: str) -> None:
    page = f'<meta charset="{charset}"><p>Un caf\xe9 co\xfbte 2 \x80.</p>'.encode("latin-1")
    assert _read(tmp_path, page) == "Un café coûte 2 €."


def test_no_lone_surrogate_reaches_the_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever a decoding gives (a plugin's decode_text, a codec not foreseen), lxml's
    # feed raises UnicodeEncodeError on a lone surrogate: it becomes U+FFFD first.
    from ragloom.loaders import html

    monkeypatch.setattr(html, "decode_text", lambda *args, **kwargs: "<p>a\ud800b</p>")
    assert _read(tmp_path, "<p>ab</p>") == "a\ufffdb"


def test_htm_extension(tmp_path: Path) -> None:
    assert _read(tmp_path, "<p>old style</p>", name="OLD.HTM") == "old style"
    assert ".htm" in HtmlReader.extensions


def test_deeply_nested_page(tmp_path: Path) -> None:
    depth = 5000  # well past Python's recursion limit
    page = "<body>" + "<div>" * depth + "deep text" + "</div>" * depth + "<p>after</p></body>"
    assert _read(tmp_path, page) == "deep text\n\nafter"


@pytest.mark.parametrize(
    "page",
    [
        "<html><head><title>Only a title</title></head><body></body></html>",
        "<script>document.write('hi')</script><style>p {}</style>",
        "<p>   </p><div>&nbsp;</div><!-- just a comment -->",
    ],
)
def test_no_visible_text(tmp_path: Path, page: str) -> None:
    path = tmp_path / "blank.html"
    path.write_text(page)
    with pytest.raises(EmptyDocumentError) as info:
        HtmlReader().read(path)
    assert info.value.reason == "the page has no visible text"
    assert info.value.path == path


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.html"
    path.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        HtmlReader().read(path)
    assert info.value.reason == "the file is empty"


def test_binary_file_named_html(tmp_path: Path) -> None:
    path = tmp_path / "image.html"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(UnreadableFileError) as info:
        HtmlReader().read(path)
    assert info.value.reason == "binary content, not text"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        HtmlReader().read(tmp_path / "gone.html")
    assert info.value.reason.startswith("cannot read the file:")


def test_page_is_a_page(tmp_path: Path) -> None:
    path = tmp_path / "p.html"
    path.write_text("<p>text</p>")
    assert HtmlReader().read(path) == [Page(text="text", number=None)]


def test_only_the_head_title_is_the_page_title(tmp_path: Path) -> None:
    page = "<body><svg><title>icon</title></svg><p>Body text</p></body>"
    assert _read(tmp_path, page) == "Body text"
    assert _read(tmp_path, "<title>Bare title</title><p>Body text</p>") == "Bare title\n\nBody text"


def test_the_first_title_of_the_head_is_the_title_even_when_blank(tmp_path: Path) -> None:
    page = "<head><title> </title><title>Second</title></head><p>Body text</p>"
    assert _read(tmp_path, page) == "Body text"
    entities = "<head><title>Caf&eacute; &amp;\n bar</title></head><p>x</p>"
    assert _read(tmp_path, entities) == "Café & bar\n\nx"


def test_text_after_the_end_of_the_page_is_read(tmp_path: Path) -> None:
    # SQLite's manual closes some pages before their footer; browsers show it.
    page = "<html><body><p>Body text</p></body></html>\n<p><i>Last <b>modified</b></i></p> 2020"
    assert _read(tmp_path, page) == "Body text\n\nLast modified\n\n2020"


def test_end_tags_of_nothing_open_are_ignored(tmp_path: Path) -> None:
    page = "</div><p>One</span> two</td></p></li><div><b>bold</div> after</b></body></html>"
    assert _read(tmp_path, page) == "One two\n\nbold\n\nafter"


def test_an_error_while_parsing_is_the_one_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lxml calls its target's close() even after a callback raised, and raises what close()
    # raises instead: finishing the page there would have turned this into a budget error.
    from ragloom.loaders import html_text

    def out_of_memory(self: object, text: str) -> None:
        self.current.append(text)  # type: ignore[attr-defined]
        raise MemoryError

    monkeypatch.setattr(html_text._PageText, "_text", out_of_memory)
    path = tmp_path / "page.html"
    path.write_text("<p>" + "x" * 150 + "</p>")
    with pytest.raises(MemoryError):
        HtmlReader(TextBudget(max_chars=100, min_chars=100)).read(path)


def test_a_page_with_too_many_elements_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "many.html"
    path.write_text("<html><body>" + "<p>x</p>" * 9 + "</body></html>")  # 11 start tags
    assert HtmlReader(max_elements=11).read(path) == [Page("x\n\n" * 8 + "x")]
    with pytest.raises(UnreadableFileError) as info:
        HtmlReader(max_elements=10).read(path)
    assert info.value.reason == "the page has more than 10 HTML elements; the limit is 10"
    assert MAX_HTML_ELEMENTS == 250_000


def test_declared_charset_of_a_big_page(tmp_path: Path) -> None:
    # Past 320 KiB only the first 16 KiB are searched for <meta charset>; a page declares it
    # in its head.
    body = "<p>Prix : 5 € le café.</p>\n" * 20_000
    page = f'<html><head><meta charset="windows-1252"></head><body>{body}</body></html>'
    text = _read(tmp_path, page.encode("cp1252"))
    assert text.startswith("Prix : 5 € le café.\n\nPrix")


def test_a_page_past_its_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.html"
    path.write_text("<title>T</title>" + "<p>twelve chars</p>" * 10)
    budget = TextBudget(max_chars=100, min_chars=100)
    with pytest.raises(FileBudgetError) as info:
        HtmlReader(budget).read(path)
    assert info.value.reason == (
        "the HTML file would expand to more than 100 characters of text from 206 bytes; "
        "the limit is 100 characters per file"
    )
