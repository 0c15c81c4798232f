"""Word ``.docx`` documents, read with python-docx.

The body is read in document order: each paragraph (headings included) becomes a paragraph
of the page, and each table one paragraph with a line per row, its cells joined with
``" | "``. Headers, footers, footnotes, comments and text boxes are not read.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path

import docx
from docx.document import Document as DocxDocument
from docx.table import Table, _Cell, _Row
from docx.text.paragraph import Paragraph

from ragloom.loaders.base import (
    EmptyDocumentError,
    LoaderError,
    TextBudget,
    UnreadableFileError,
    file_size,
)
from ragloom.loaders.zip_limits import ZipLimits, declared_problem, entries_problem
from ragloom.schema import Page

__all__ = ["DocxReader"]

logger = logging.getLogger(__name__)

# python-docx inflates every part into memory before it parses a word, so a .docx is checked
# as the zip it is first. A real document is a few MB unpacked (its pictures are stored
# compressed already), so more than 512 MB, or XML compressed past 200 to 1 (a docx bomb:
# gigabytes of word/document.xml in a MB), is refused. Hundreds of parts are common
# (a picture is one), ten thousand is not.
DOCX_LIMITS = ZipLimits(
    max_members=10_000, max_total_bytes=512 << 20, max_ratio=200.0, max_entries=20_000
)


class DocxReader:
    """Reads ``.docx`` files into one :class:`Page`.

    ``number`` is ``None``: a .docx has no fixed pages until Word lays the document out.
    The text stops at ``budget`` (:class:`TextBudget`), counted block by block.
    """

    extensions: tuple[str, ...] = (".docx",)

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.budget = budget or TextBudget()

    def read(self, path: Path) -> list[Page]:
        """The text of ``path`` as a single page; raises a ``LoaderError`` if there is none."""
        size = file_size(path)
        _check_package(path, size)
        try:
            document = docx.Document(str(path))
        except MemoryError:
            raise  # the readers sandbox's limit says so; not a damaged file
        except Exception as exc:
            # python-docx raises PackageNotFoundError, KeyError, ValueError or lxml errors
            # for a damaged or foreign package: to the user they all mean the same thing.
            raise UnreadableFileError(f"not a valid .docx file: {_detail(exc)}", path) from exc
        meter = self.budget.meter(size, "Word file", path)
        blocks: list[str] = []
        try:
            for text in _blocks(document):
                if text:
                    meter.add(len(text) + 2)  # and the blank line that joins blocks
                    blocks.append(text)
        except (LoaderError, MemoryError):
            raise
        except Exception as exc:
            raise UnreadableFileError(f"not a valid .docx file: {_detail(exc)}", path) from exc
        if not blocks:
            raise EmptyDocumentError("no text found in the document", path)
        logger.debug("%s: %d paragraphs and tables", path.name, len(blocks))
        return [Page(text="\n\n".join(blocks), number=None)]


def _check_package(path: Path, size: int) -> None:
    """Refuse a file that is not a zip, or one over :data:`DOCX_LIMITS` (a docx bomb)."""
    problem = entries_problem(path, DOCX_LIMITS, what="the document")
    if problem:
        raise UnreadableFileError(problem, path)
    try:
        with zipfile.ZipFile(path) as package:
            parts = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UnreadableFileError(f"not a valid .docx file: {_detail(exc)}", path) from exc
    problem = declared_problem(parts, size, DOCX_LIMITS, what="the document")
    if problem:
        raise UnreadableFileError(problem, path)


def _blocks(document: DocxDocument) -> Iterator[str]:
    """The text of each top-level paragraph and table of the body, in document order."""
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            yield _paragraph_text(item)
        elif isinstance(item, Table):
            yield "\n".join(line for line in map(_row_text, item.rows) if line)


def _paragraph_text(paragraph: Paragraph) -> str:
    """The paragraph's text; a manual line break stays a line break, blank lines go."""
    lines = (" ".join(line.split()) for line in paragraph.text.splitlines())
    return "\n".join(line for line in lines if line)


def _row_text(row: _Row) -> str:
    """``"cell | cell | cell"``; a cell spanning several columns is written once."""
    cells: list[str] = []
    previous = None
    for cell in row.cells:
        # python-docx repeats a merged cell once per grid column it spans.
        if cell._tc is previous:
            continue
        previous = cell._tc
        cells.append(_cell_text(cell))
    if not any(cells):
        return ""
    return " | ".join(cells)


def _cell_text(cell: _Cell) -> str:
    """A cell's text on one line; a table nested in it contributes its rows' text."""
    parts: list[str] = []
    for item in cell.iter_inner_content():
        if isinstance(item, Paragraph):
            parts.append(item.text)
        else:
            # Read nested tables flat (no recursion): Word documents nest them rarely and
            # shallowly, and a row of a row's cell would not read better with more structure.
            parts.extend(" ".join(c.text for c in row.cells) for row in item.rows)
    return " ".join(" ".join(parts).split())


def _detail(exc: BaseException) -> str:
    """A one-line description of a library error for the user."""
    # str() of a KeyError is the repr of its key, quotes included.
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    text = " ".join(str(message).split())
    return text[:200] if text else type(exc).__name__
