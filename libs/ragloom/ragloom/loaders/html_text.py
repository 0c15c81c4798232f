"""The visible text of an HTML page as lxml parses it, in paragraphs that keep structure.

What answers a question about technical documentation is often not prose: a signature, a
term and its definition, a row of a table of options. So, besides prose paragraphs:

- **Preformatted text** (``<pre>``...) keeps its lines and their indentation (trailing
  whitespace and blank lines are dropped); it is never joined into prose.
- **Headings** (``<h1>``-``<h6>``, a table's ``<caption>``) start the paragraph of what
  follows them, one line each: a section's heading, or the path of headings above it
  ("PRAGMA Statements" / "List Of PRAGMAs"), then its first block, so a chunk that holds
  that block holds its heading too, and code keeps its caption.
- **Definition lists**: each ``<dt>`` term and its ``<dd>`` description make one paragraph
  (``term`` on the first line, the description after it), whatever blocks the
  description holds, so the splitter keeps a term with its definition.
- **Tables** with a header row (a first row of ``<th>`` cells only) give each later row as
  ``header: value; header: value`` (empty cells left out), the way the CSV reader writes a
  row; a header is cut to :data:`~ragloom.loaders.tabular.MAX_HEADER_CHARS` characters.
  Rows of a table without one are cells joined by ``" | "``. Whatever a cell holds (blocks,
  a nested table) is one run of text.

Other block elements end a paragraph; ``<br>``, a list item and a table row end a line;
runs of whitespace become one space. Every character is counted on the page's
:class:`~ragloom.loaders.base.TextMeter` as it is produced, a table row pair by pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from ragloom.loaders.base import TextMeter
from ragloom.loaders.tabular import abbreviate_header

__all__ = ["visible_text"]

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
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "caption"})
_BLOCKS = _HEADINGS | frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
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
_DEFINITION = frozenset({"dt", "dd"})
_CELLS = frozenset({"td", "th"})
_PREFORMATTED = frozenset({"pre", "textarea", "listing", "plaintext", "xmp"})


def visible_text(markup: str, meter: TextMeter) -> tuple[str, list[str]]:
    """The page's title and the text of its paragraphs, in order, counted on ``meter``.

    The title is the first ``<title>`` in the ``<head>`` of the page's ``<html>``, its
    whitespace collapsed (``""`` if none); a ``<title>`` elsewhere (inside an ``<svg>``) is
    not the page's. Empty paragraphs are left out. Raises what lxml raises for markup it
    rejects, and the meter's error past its budget.
    """
    events = _Events(_PageText(meter))
    parser = etree.HTMLParser(recover=True, target=events)
    parser.feed(markup)
    parser.close()
    events.finish()
    return events.title, events.page.paragraphs


# The page title's search (_Events): (waiting for, element, depth) that moves it on, and
# (waiting for, element ending, depth) that ends it empty-handed.
_TITLE_PATH = frozenset({("html", "html", 0), ("head", "head", 1)})
_TITLE_NEXT = {"html": "head", "head": "title", "title": ""}
_TITLE_GIVE_UP = frozenset({("head", "html", 0), ("title", "head", 1)})


class _Events:
    """lxml's parser target: passes the visible part of the page to a :class:`_PageText`.

    lxml calls it as it parses (no tree is built: a tree would cost time and memory, and
    libxml2's tree stops at 256 levels of nesting, dropping the rest of the page). What
    follows an invisible or hidden element's start, up to its end, is left out; comments
    and processing instructions never reach it (no ``comment`` or ``pi`` method).
    """

    def __init__(self, page: _PageText) -> None:
        self.page = page
        self.title = ""
        self._open: list[str] = []  # the names of the elements the parser is inside
        self._hidden_at: int | None = None  # the depth of the invisible one, if any
        # The page title's search: what it waits for next, on the path to it (the first
        # <html> at the top, its first <head>, the first <title> in that), "" once over.
        self._title_stage = "html"
        self._title: list[str] | None = None  # the page title's text, while inside it

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        depth = len(self._open)
        self._open.append(tag)
        stage = self._title_stage
        if (stage, tag, depth) in _TITLE_PATH or (stage == tag == "title"):
            self._title_stage = _TITLE_NEXT[stage]
            if tag == "title":
                self._title = []
        if self._hidden_at is not None:
            return
        if tag in _INVISIBLE or "hidden" in attrib:
            self._hidden_at = depth
        else:
            self.page.feed("start", tag)

    def end(self, tag: str) -> None:
        # libxml2 closes what an end tag implies; an end tag of no open element is dropped.
        if not self._open or (self._open[-1] != tag and tag not in self._open):
            return
        while self._open:
            name = self._open.pop()
            self._ended(name)
            if name == tag:
                return

    def data(self, text: str) -> None:
        if self._title is not None:
            self._title.append(text)
        if self._hidden_at is None:
            self.page.feed("text", text)

    def close(self) -> None:
        # lxml calls this even after a callback raised, and would raise what this raises
        # instead; the page is finished by finish(), once parsing went through.
        return None

    def finish(self) -> None:
        """End what is still open and the last paragraph, after the parse."""
        while self._open:
            self._ended(self._open.pop())
        self.page.finish()

    def _ended(self, name: str) -> None:
        depth = len(self._open)
        if self._title is not None and name == "title":
            self.title = " ".join("".join(self._title).split())
            self.page.meter.add(len(self.title))
            self._title = None
        elif (self._title_stage, name, depth) in _TITLE_GIVE_UP:
            self._title_stage = ""  # its <html> or <head> ended without what was looked for
        if self._hidden_at is None:
            self.page.feed("end", name)
        elif depth == self._hidden_at:
            self._hidden_at = None


@dataclass
class _Table:
    headers: list[str] | None = None
    rows: int = 0  # rows seen so far
    header_line: str = ""  # written only if no data row follows


@dataclass
class _Row:
    cells: list[str] = field(default_factory=list)
    headers_only: bool = True  # every cell so far is a <th>
    mark: int = 0  # where the open cell's text starts in the line being built


class _PageText:
    """Builds paragraphs from the parser's events (see the module for the rules)."""

    def __init__(self, meter: TextMeter) -> None:
        self.meter = meter
        self.paragraphs: list[str] = []
        self.lines: list[str] = []
        self.current: list[str] = []
        self.preformatted = 0  # <pre> elements the parser is inside
        self.definition = 0  # <dt>/<dd> elements the parser is inside
        self.cell = 0  # depth inside a table cell: its content is one run of text
        self.tables: list[_Table] = []
        self.rows: list[_Row] = []
        self.after_heading = False  # the paragraph holds headings only, so far...
        self.heading_lines = 0  # ...this many lines of them
        self.after_description = False  # a <dd> ended: the next <dt> starts a new pair

    def feed(self, event: str, value: str) -> None:
        """``("start", name)``, ``("text", text)`` or ``("end", name)``, in page order."""
        if event == "text":
            self._text(value)
            return
        name = value
        if self.cell:
            self._in_cell(event, name)
        elif name in _CELLS:
            if event == "start" and self.rows:
                row = self.rows[-1]
                row.mark = len(self.current)
                row.headers_only = row.headers_only and name == "th"
                self.cell = 1
        elif name == "tr":
            self._row(event)
        elif name in _DEFINITION:
            self._definition(event, name)
        elif name in {"br", "li"}:
            self._end_line()
        elif name in _BLOCKS:
            self._block(event, name)
        if name in _PREFORMATTED and name not in _BLOCKS and not self.cell:
            self.preformatted += 1 if event == "start" else -1

    def finish(self) -> None:
        """Ends the last paragraph."""
        self._end_line()
        self._flush()

    def _text(self, text: str) -> None:
        if self.preformatted and not self.cell:
            # Preformatted text keeps its line breaks (code, signatures, addresses).
            first, *rest = text.split("\n")
            self.current.append(first)
            for part in rest:
                self._end_line()
                self.current.append(part)
        else:
            self.current.append(text)

    def _in_cell(self, event: str, name: str) -> None:
        if name in _CELLS:
            self.cell += 1 if event == "start" else -1
            if self.cell == 0:
                self._end_cell()
                return
        # Whatever separates text inside a cell (a block, a nested cell) is a space.
        if name in _BLOCKS or name in _DEFINITION or name in _CELLS or name in {"br", "li", "tr"}:
            self.current.append(" ")

    def _end_cell(self) -> None:
        row = self.rows[-1]
        row.cells.append(" ".join("".join(self.current[row.mark :]).split()))
        del self.current[row.mark :]

    def _row(self, event: str) -> None:
        if event == "start":
            self._end_line()
            self.rows.append(_Row())
            return
        if not self.rows:
            return
        row = self.rows.pop()
        table = self.tables[-1] if self.tables else _Table()
        table.rows += 1
        if table.rows == 1 and row.headers_only and row.cells:
            table.headers = [_header(cell, i) for i, cell in enumerate(row.cells, start=1)]
            table.header_line = " | ".join(row.cells)
            return
        if table.headers is None:
            self._emit(" | ".join(row.cells))
            return
        pairs: list[str] = []
        for i, value in enumerate(row.cells):
            if not value:
                continue
            name = table.headers[i] if i < len(table.headers) else f"column {i + 1}"
            pair = f"{name}: {value}"
            # Counted pair by pair: a row of many cells must not be built whole first.
            self.meter.add(len(pair) + (2 if pairs else 0))
            pairs.append(pair)
        table.header_line = ""
        self._emit("; ".join(pairs), counted=True)

    def _definition(self, event: str, name: str) -> None:
        if event == "end":
            self.definition -= 1
            self._end_line()
            self.after_description = name == "dd"
            return
        if name == "dt" and self.after_description and not self.definition:
            self._end_paragraph()  # a new term: a new pair
        else:
            self._end_line()
        self.after_description = False
        self.definition += 1

    def _block(self, event: str, name: str) -> None:
        if name == "table":
            self._table(event)
        elif self.definition:
            self._end_line()  # the blocks of a description stay with its term
        elif name in _HEADINGS and event == "end":
            self._end_line()
            self.after_heading, self.heading_lines = True, len(self.lines)
        else:
            self._end_paragraph()
        if name in _PREFORMATTED:
            self.preformatted += 1 if event == "start" else -1

    def _table(self, event: str) -> None:
        if self.definition:
            self._end_line()
        else:
            self._end_paragraph()
        if event == "start":
            self.tables.append(_Table())
        elif self.tables:
            table = self.tables.pop()
            if table.header_line:  # a table of headers alone: keep them
                self._emit(table.header_line)
                if not self.definition:
                    self._end_paragraph()

    def _end_line(self) -> None:
        if self.preformatted:
            # Indentation is meaning in code; only the end of a line is trimmed.
            line = "".join(self.current).rstrip()
            line = line if line.strip() else ""
        else:
            line = " ".join("".join(self.current).split())
        self.current.clear()
        self._emit(line)

    def _emit(self, line: str, counted: bool = False) -> None:
        if not line:
            return
        self.meter.add(1 if counted else len(line) + 1)  # and the newline after it
        self.lines.append(line)

    def _end_paragraph(self) -> None:
        self._end_line()
        if self.after_heading and len(self.lines) == self.heading_lines:
            return  # nothing after the headings yet: they wait for their block
        self._flush()

    def _flush(self) -> None:
        self.after_heading = False
        if self.lines:
            self.meter.add(1)  # a paragraph ends with a blank line
            self.paragraphs.append("\n".join(self.lines))
            self.lines.clear()


def _header(cell: str, number: int) -> str:
    return abbreviate_header(cell or f"column {number}")
