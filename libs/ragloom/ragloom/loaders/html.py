"""HTML pages, reduced to the text a reader of the page sees, parsed by BeautifulSoup (lxml).

The page's ``<title>`` becomes the first line. Scripts, styles, templates, the rest of the
``<head>`` and embedded media are dropped. Every block element (paragraph, heading,
``<div>``, a whole list or table...) ends a paragraph, so the splitter sees the page's own
paragraphs; ``<br>``, a list item and a table row end a line (table cells of a row are
joined with ``" | "``); other runs of whitespace become one space.

The bytes are decoded the way a browser would: a byte-order mark first, then the charset the
page declares (``<meta charset>``, ``http-equiv`` or an XML declaration), then detection.

BeautifulSoup keeps about a kilobyte of Python objects per element and builds some 80,000
elements a second, so a page of more than :data:`MAX_HTML_ELEMENTS` start tags is refused
before it is parsed (8 MB of ``<p>x</p>`` would take a gigabyte and 13 s).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.dammit import EncodingDetector
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from ragloom.loaders.base import (
    EmptyDocumentError,
    TextBudget,
    TextMeter,
    UnreadableFileError,
    read_bytes,
    without_surrogates,
)
from ragloom.loaders.text import decode_text
from ragloom.schema import Page

__all__ = ["MAX_HTML_ELEMENTS", "HtmlReader"]

MAX_HTML_ELEMENTS = 250_000
"""Start tags a page may have: nine times SQLite's largest documentation page (28,000)."""
_START_TAG = re.compile(r"<[A-Za-z]")
_DECLARATION_SCAN = 320 * 1024

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
    """Reads ``.html`` and ``.htm`` files into one :class:`Page` of visible text.

    A page with more than ``max_elements`` start tags, or whose text would go past
    ``budget``, is refused.
    """

    extensions: tuple[str, ...] = (".html", ".htm")

    def __init__(
        self, budget: TextBudget | None = None, max_elements: int = MAX_HTML_ELEMENTS
    ) -> None:
        self.budget = budget or TextBudget()
        self.max_elements = max_elements

    def read(self, path: Path) -> list[Page]:
        """The visible text of ``path`` as a single page; raises a ``LoaderError`` if none."""
        data = read_bytes(path)
        markup = decode_text(data, path, encoding=_declared_encoding(data))
        self._check_elements(markup, path)
        meter = self.budget.meter(len(data), "HTML file", path)
        try:
            soup = BeautifulSoup(markup, "lxml")
        except MemoryError:
            raise  # the readers sandbox's limit says so; not a damaged file
        except Exception as exc:  # lxml is lenient; anything it still rejects is unreadable
            raise UnreadableFileError(f"not a valid HTML file: {exc}", path) from exc
        title = _title(soup)
        meter.add(len(title))
        paragraphs = _visible_paragraphs(soup, meter)
        if not paragraphs:
            raise EmptyDocumentError("the page has no visible text", path)
        if title:
            paragraphs.insert(0, title)
        return [Page(text=without_surrogates("\n\n".join(paragraphs)), number=None)]

    def _check_elements(self, markup: str, path: Path) -> None:
        # Counting stops one past the limit: a huge page is refused after a quick scan.
        tags = itertools.islice(_START_TAG.finditer(markup), self.max_elements + 1)
        if sum(1 for _ in tags) > self.max_elements:
            raise UnreadableFileError(
                f"the page has more than {self.max_elements:,} HTML elements; "
                f"the limit is {self.max_elements:,}",
                path,
            )


def _declared_encoding(data: bytes) -> str | None:
    """The charset the page declares near its start, as a Python codec name, or ``None``."""
    # bs4 looks for <meta charset> in the first 5 % of what it is given, with a regular
    # expression that is quadratic on a run of "<meta " (110 s for 9.6 MB of them); given
    # at most 320 KiB it looks at 16 KiB at most (70 ms), and pages up to that size are
    # read exactly as before. Browsers look at the first 1,024 bytes.
    declared = EncodingDetector.find_declared_encoding(data[:_DECLARATION_SCAN], is_html=True)
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


def _visible_paragraphs(soup: BeautifulSoup, meter: TextMeter) -> list[str]:
    """The text of the page's paragraphs, in order, without empty ones, counted on ``meter``."""
    paragraphs: list[str] = []
    lines: list[str] = []
    current: list[str] = []

    def end_line() -> None:
        line = " ".join("".join(current).split())
        current.clear()
        if line:
            meter.add(len(line) + 1)  # and the newline after it
            lines.append(line)

    def end_paragraph() -> None:
        end_line()
        if lines:
            meter.add(1)  # a paragraph ends with a blank line
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
