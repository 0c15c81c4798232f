"""Small, valid PDFs built byte by byte, for tests that need real files.

pypdf cannot lay out text, so :func:`make_pdf` writes the objects itself: a catalog, a page
tree, the standard Helvetica font and one content stream per page, with a correct xref table.
:func:`make_form_pdf` writes a text amplifier: one compressed form XObject drawn many times;
:func:`make_inflating_pdf` a page whose compressed content inflates to a given size.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence

import pypdf

__all__ = ["encrypt_pdf", "make_form_pdf", "make_inflating_pdf", "make_pdf"]


def _pdf_string(text: str) -> str:
    """``text`` as a PDF literal string (ASCII only: Helvetica's standard encoding)."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"({escaped})"


def _content(text: str | None) -> bytes:
    if text is None:
        # A page that draws a line but has no text layer, like a scanned page.
        return b"72 700 m 300 700 l S"
    ops = ["BT", "/F1 12 Tf", "72 700 Td", "14 TL"]
    for i, line in enumerate(text.split("\n")):
        ops.append(f"{_pdf_string(line)} Tj" if i == 0 else f"{_pdf_string(line)} '")
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def make_pdf(pages: Sequence[str | None]) -> bytes:
    """A PDF with one page per item: its lines of text, or ``None`` for a page without text."""
    count = len(pages)
    page_ids = [4 + 2 * i for i in range(count)]
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for pid, text in zip(page_ids, pages, strict=True):
        stream = _content(text)
        objects.append(
            (
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 3 0 R >> >> /Contents {pid + 1} 0 R >>"
            ).encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return _assemble(objects)


def make_form_pdf(form_text: str, draws: int, pages: int = 1) -> bytes:
    """``pages`` pages that each draw one form XObject showing ``form_text`` ``draws`` times.

    Both streams are Flate-compressed, so a few kilobytes give ``pages * draws *
    len(form_text)`` characters of text.
    """
    form = zlib.compress(b"BT /F1 12 Tf 72 700 Td " + _pdf_string(form_text).encode() + b" Tj ET")
    drawing = zlib.compress(b"q /X1 Do Q\n" * draws)
    page_ids = range(6, 6 + pages)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % pid for pid in page_ids), pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
        b" >> >> /Filter /FlateDecode /Length %d >>\nstream\n" % len(form) + form + b"\nendstream",
        b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(drawing)
        + drawing
        + b"\nendstream",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
        b" >> /XObject << /X1 4 0 R >> >> /Contents 5 0 R >>"
    ] * pages
    return _assemble(objects)


def make_inflating_pdf(letters: int) -> bytes:
    """One page that shows ``letters`` times "a", Flate-compressed (80 MB take 78 kB)."""
    packer = zlib.compressobj(9)
    parts = [packer.compress(b"BT /F1 12 Tf 72 700 Td (")]
    block = b"a" * (1 << 20)
    for _ in range(letters // len(block)):
        parts.append(packer.compress(block))
    parts += [packer.compress(b"a" * (letters % len(block)) + b") Tj ET"), packer.flush()]
    stream = b"".join(parts)
    return _assemble(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1"
            b" 3 0 R >> >> /Contents 5 0 R >>",
            b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream",
        ]
    )


def _assemble(objects: Sequence[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the first the catalog) and its xref."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


def encrypt_pdf(data: bytes, user_password: str, owner_password: str | None = None) -> bytes:
    """``data`` encrypted with pypdf's default (RC4-128, no extra dependency)."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password=owner_password)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
