"""PDF files with a text layer, read page by page with pypdf.

pypdf logs a warning for every defect it repairs (a wrong xref offset, a missing EOF
marker...), which would flood the console of a user who only uploaded a slightly odd PDF.
While this reader runs, those records go to this module's logger at DEBUG instead, with the
file's name, and one INFO line per file says how many there were. Records pypdf logs for
anyone else in the process are passed on unchanged.

Encrypted PDFs that open with an empty password (permission-only protection, common in the
wild) are read; pypdf decrypts RC4 itself but needs the ``cryptography`` package for AES.

pypdf bounds what one stream may decompress to (75 MB) and how many form XObjects one page
may draw (5,000), but a small compressed form drawn 5,000 times still makes gigabytes of
text. The text is counted against the reader's :class:`~ragloom.loaders.base.TextBudget`
while pypdf extracts it (through its ``visitor_text`` callback), so such a page is stopped
as soon as the file crosses its limit, not after the whole page's text exists. A visitor
makes pypdf parse every content stream, so pages without an operator that can show text
(charts, maps, scans) are extracted without one, as fast as before.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import pypdf
from pypdf.errors import DependencyError, LimitReachedError

from ragloom.loaders.base import (
    EmptyDocumentError,
    FileBudgetError,
    TextBudget,
    TextMeter,
    UnreadableFileError,
    read_bytes,
    without_surrogates,
)
from ragloom.schema import Page

__all__ = ["PdfReader"]

logger = logging.getLogger(__name__)

_NO_TEXT_REASON = "no text found (a scanned PDF without a text layer?)"
# The operators through which pypdf finds text (its own _TEXT_OPERATORS, 7.1): a page
# whose content has none of them gives no text, and cannot give too much.
_TEXT_OPERATOR = re.compile(rb"T[jJ]|Do|['\"]")
# Readers accept a PDF header anywhere in the first KiB (some tools prepend junk).
_HEADER_WINDOW = 1024


@dataclass
class _ReadLog:
    """What pypdf reported while one file was read (per thread, through a ContextVar)."""

    name: str
    warnings: int = 0


_current_read: ContextVar[_ReadLog | None] = ContextVar("ragloom_pdf_read", default=None)
_routing_lock = threading.Lock()
_routing_installed = False


class _PypdfLogRouter(logging.Handler):
    """Demotes pypdf's records logged during a Ragloom read to DEBUG on our logger."""

    def emit(self, record: logging.LogRecord) -> None:
        """Re-log ``record`` at DEBUG during a read; otherwise hand it to the root logger."""
        read = _current_read.get()
        if read is None:
            # Not ours: deliver it the way propagation would have without this handler.
            logging.getLogger().handle(record)
            return
        try:
            read.warnings += 1
            logger.debug("%s: pypdf: %s", read.name, record.getMessage())
        except Exception:  # a logging handler must never raise into pypdf
            self.handleError(record)


def _route_pypdf_logging() -> None:
    """Install the router once, on first use rather than at import."""
    global _routing_installed
    with _routing_lock:
        if _routing_installed:
            return
        pypdf_logger = logging.getLogger("pypdf")
        pypdf_logger.addHandler(_PypdfLogRouter())
        # pypdf's modules log to child loggers ("pypdf._reader"...); their records reach the
        # router by propagation, and stop there instead of also reaching the root handlers.
        pypdf_logger.propagate = False
        _routing_installed = True


class PdfReader:
    """Reads ``.pdf`` files: one :class:`Page` per page that has text, numbered from 1.

    A file whose text would go past ``budget`` is refused.
    """

    extensions: tuple[str, ...] = (".pdf",)

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.budget = budget or TextBudget()

    def read(self, path: Path) -> list[Page]:
        """The pages of ``path`` that have text; raises a ``LoaderError`` if there are none."""
        data = read_bytes(path)
        if b"%PDF-" not in data[:_HEADER_WINDOW]:
            # Without this pypdf fails later with an obscure "Stream has ended unexpectedly".
            raise UnreadableFileError("not a valid PDF: it has no PDF header", path)
        _route_pypdf_logging()
        read_log = _ReadLog(path.name)
        token = _current_read.set(read_log)
        try:
            return _read_pages(data, path, self.budget.meter(len(data), "PDF file", path))
        finally:
            _current_read.reset(token)
            if read_log.warnings:
                logger.info(
                    "%s: pypdf reported %d problems with the file (details at DEBUG)",
                    path.name,
                    read_log.warnings,
                )


class _OverBudget(Exception):
    """Raised from inside pypdf's extraction to stop it; never leaves this module."""


class _PageMeter:
    """pypdf's ``visitor_text``: counts a page's text as it is extracted, stops past budget."""

    def __init__(self, meter: TextMeter) -> None:
        self.meter = meter
        self.chars = 0

    def __call__(self, text: str, *_position: object) -> None:
        self.chars += len(text)
        if self.meter.used + self.chars > self.meter.limit:
            # pypdf swallows exceptions from inside a form XObject (and goes on with the
            # page), so the caller checks the count again once extraction returns.
            raise _OverBudget


def _may_show_text(pdf_page: pypdf.PageObject) -> bool:
    try:
        contents = pdf_page.get_contents()
        return contents is not None and _TEXT_OPERATOR.search(contents.get_data()) is not None
    except Exception:  # a damaged page: extraction with the budget will tell
        return True


def _extract(pdf_page: pypdf.PageObject, meter: TextMeter) -> str:
    """The page's text; raises the budget's error as soon as the file goes past it."""
    if not _may_show_text(pdf_page):
        return pdf_page.extract_text()
    visitor = _PageMeter(meter)
    try:
        text = pdf_page.extract_text(visitor_text=visitor)
    except _OverBudget:
        raise meter.error() from None
    if meter.used + visitor.chars > meter.limit:
        raise meter.error()
    return text


def _read_pages(data: bytes, path: Path, meter: TextMeter) -> list[Page]:
    # pypdf raises many exception types on malformed input (PdfReadError, but also
    # ValueError, KeyError, struct errors...): for an uploaded file any of them just means
    # "this PDF is damaged", so the parsing steps below catch Exception.
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    except MemoryError:
        raise  # the readers sandbox's limit says so; not a damaged file
    except Exception as exc:
        raise UnreadableFileError(f"not a valid PDF: {_detail(exc)}", path) from exc
    _decrypt(reader, path)
    try:
        pdf_pages = list(reader.pages)
    except MemoryError:
        raise
    except Exception as exc:
        raise UnreadableFileError(f"not a valid PDF: {_detail(exc)}", path) from exc

    pages: list[Page] = []
    first_error: Exception | None = None
    for number, pdf_page in enumerate(pdf_pages, start=1):
        try:
            text = _extract(pdf_page, meter)
        except (FileBudgetError, MemoryError):
            raise
        except Exception as exc:
            # One broken content stream should not cost the user the rest of the document.
            logger.warning("%s: page %d skipped, unreadable: %s", path.name, number, _detail(exc))
            first_error = first_error or exc
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        meter.add(len(text))
        if text.strip():
            pages.append(Page(text=without_surrogates(text), number=number))
        else:
            logger.debug("%s: page %d has no text", path.name, number)

    if pages:
        return pages
    if first_error is not None:
        raise UnreadableFileError(f"not a valid PDF: {_detail(first_error)}", path)
    raise EmptyDocumentError(_NO_TEXT_REASON, path)


def _decrypt(reader: pypdf.PdfReader, path: Path) -> None:
    if not reader.is_encrypted:
        return
    try:
        result = reader.decrypt("")
    except DependencyError as exc:
        raise UnreadableFileError(
            "encrypted PDF: its AES encryption needs the 'cryptography' package", path
        ) from exc
    except Exception as exc:
        raise UnreadableFileError(f"encrypted PDF: {_detail(exc)}", path) from exc
    if result == pypdf.PasswordType.NOT_DECRYPTED:
        raise UnreadableFileError("encrypted PDF: a password is needed to open it", path)


def _detail(exc: BaseException) -> str:
    """A one-line description of a pypdf error for the user."""
    text = " ".join(str(exc).split())
    text = text[:200] if text else type(exc).__name__
    if isinstance(exc, LimitReachedError):
        # A stream over 75 MB decompressed, a reference loop, a page tree too deep...
        bomb = " (a decompression bomb?)" if "decompress" in text.lower() else ""
        return f"it is past one of pypdf's safety limits{bomb}: {text}"
    return text
