"""HTML pages, reduced to the text a reader of the page sees, parsed by BeautifulSoup (lxml).

The page's ``<title>`` becomes the first line. Scripts, styles, templates, the rest of the
``<head>`` and embedded media are dropped. Every block element (paragraph, heading,
``<div>``, a whole list or table...) ends a paragraph, so the splitter sees the page's own
paragraphs; ``<br>``, a list item and a table row end a line (table cells of a row are
joined with ``" | "``); other runs of whitespace become one space.

The bytes are decoded the way a browser would: a byte-order mark first, then the charset the
page declares (``<meta charset>``, ``http-equiv`` or an XML declaration), then detection.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.dammit import EncodingDetector
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from ragloom.loaders.base import EmptyDocumentError, UnreadableFileError
from ragloom.loaders.text import decode_text
from ragloom.schema import Page

__all__ = ["HtmlReader"]

logger = logging.getLogger(__name__)

# Never shown by a browser as text: code, metadata, and the fallback text of media elements
# ("your browser does not support video") that would only add noise to the chunks.
_INVISIBLE = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "iframe",
        "object",
        "embed",
        "canvas",
        "svg",
        "math",
        "audio",
        "video",
        "select",
    }
)

_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "details",
        "dialog",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "ul",
    }
)
# Items of a list and rows of a table are lines of one paragraph: the list or the table.
_LINES = frozenset({"dd", "dt", "li", "tr"})
_CELLS = frozenset({"td", "th"})
_PREFORMATTED = frozenset({"pre", "textarea", "listing", "plaintext", "xmp"})

# Markup that is not text even though bs4 stores it as a string.
_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)

# The WHATWG encoding standard maps these labels to windows-1252, and browsers decode such
# pages that way: "latin-1" pages routinely contain curly quotes and euro signs (0x80-0x9f).
_AS_CP1252 = frozenset({"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "ascii", "us-ascii"})


class HtmlReader:
    """Reads ``.html`` and ``.htm`` files into one :class:`Page` of visible text."""

    extensions: tuple[str, ...] = (".html", ".htm")

    def read(self, path: Path) -> list[Page]:
        """The visible text of ``path`` as a single page; raises a ``LoaderError`` if none."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}", path) from exc
        if not data:
            raise EmptyDocumentError("the file is empty", path)
        markup = decode_text(data, path, encoding=_declared_encoding(data))
        try:
            soup = BeautifulSoup(markup, "lxml")
        except Exception as exc:  # lxml is lenient; anything it still rejects is unreadable
            raise UnreadableFileError(f"not a valid HTML file: {exc}", path) from exc
        title = _title(soup)
        paragraphs = _visible_paragraphs(soup)
        if not paragraphs:
            raise EmptyDocumentError("the page has no visible text", path)
        if title:
            paragraphs.insert(0, title)
        return [Page(text="\n\n".join(paragraphs), number=None)]


def _declared_encoding(data: bytes) -> str | None:
    """The charset the page declares near its start, as a Python codec name, or ``None``."""
    declared = EncodingDetector.find_declared_encoding(data, is_html=True)
    if declared is None:
        return None
    if declared in _AS_CP1252:
        return "cp1252"
    if declared.startswith(("utf-16", "utf-32", "utf16", "utf32")):
        # A page that could carry this declaration in ASCII bytes is not UTF-16; browsers
        # read it as UTF-8 (a real UTF-16 file has a byte-order mark, which wins anyway).
        return "utf-8"
    return declared


def _title(soup: BeautifulSoup) -> str:
    """The page's title, whitespace collapsed, or ``""``."""
    # lxml puts a document's <title> in <head>; a <title> elsewhere (inside an <svg>) is not
    # the page's. Looking only there also spares a search of the whole tree.
    html = soup.find("html", recursive=False)
    head = html.find("head", recursive=False) if isinstance(html, Tag) else None
    title = head.find("title") if isinstance(head, Tag) else None
    if not isinstance(title, Tag):
        return ""
    return " ".join(title.get_text(" ").split())


def _visible_paragraphs(soup: BeautifulSoup) -> list[str]:
    """The text of the page's paragraphs, in order, without empty ones."""
    paragraphs: list[str] = []
    lines: list[str] = []
    current: list[str] = []

    def end_line() -> None:
        line = " ".join("".join(current).split())
        current.clear()
        if line:
            lines.append(line)

    def end_paragraph() -> None:
        end_line()
        if lines:
            paragraphs.append("\n".join(lines))
            lines.clear()

    preformatted = 0  # how many <pre> elements the walk is inside
    row_cells: list[int] = []  # cells seen so far in each table row the walk is inside
    for event, node in _walk(soup):
        if isinstance(node, NavigableString):
            if preformatted:
                # Preformatted text keeps its line breaks (code, poems, addresses).
                first, *rest = str(node).split("\n")
                current.append(first)
                for part in rest:
                    end_line()
                    current.append(part)
            else:
                current.append(str(node))
        elif node.name == "br" or node.name in _LINES:
            end_line()
            if node.name == "tr":
                if event == "start":
                    row_cells.append(0)
                elif row_cells:
                    row_cells.pop()
        elif node.name in _BLOCKS:
            end_paragraph()
            if node.name in _PREFORMATTED:
                preformatted += 1 if event == "start" else -1
        elif node.name in _PREFORMATTED:
            preformatted += 1 if event == "start" else -1
        elif node.name in _CELLS and event == "start" and row_cells:
            if row_cells[-1]:
                current.append(" | ")
            row_cells[-1] += 1
    end_paragraph()
    return paragraphs


def _walk(root: Tag) -> Iterator[tuple[str, Tag | NavigableString]]:
    """Yield ``("start", tag)``, text nodes and ``("end", tag)`` in document order.

    Invisible elements, hidden elements and comments are left out. Iterative, so a deeply
    nested page cannot exhaust Python's recursion limit.
    """
    stack: list[tuple[str, Tag | NavigableString]] = [("start", root)]
    while stack:
        event, node = stack.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, _NOT_TEXT):
                yield "text", node
            continue
        if event == "end":
            yield "end", node
            continue
        if node.name in _INVISIBLE or node.has_attr("hidden"):
            continue
        yield "start", node
        stack.append(("end", node))
        for child in reversed(node.contents):
            if isinstance(child, Tag | NavigableString):
                stack.append(("start", child))
