"""Zip bombs built in a second or less: members streamed from one repeated block.

Deflate squeezes a repeated block about 1000 to 1, so a few hundred MB unpacked make an
archive of a few hundred KB.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

__all__ = ["docx_bomb", "write_repeated", "zip_of_repeats"]

_BLOCK = (b"<w:p/>" * (1 << 18))[: 1 << 20]
_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
)


def write_repeated(archive: zipfile.ZipFile, name: str, n_bytes: int) -> None:
    """Add member ``name`` of ``n_bytes`` of a repeated block, deflated."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w", force_zip64=n_bytes >= 1 << 31) as out:
        left = n_bytes
        while left > 0:
            out.write(_BLOCK[: min(left, len(_BLOCK))])
            left -= len(_BLOCK)


def zip_of_repeats(path: Path, members: dict[str, int]) -> Path:
    """A zip at ``path`` of members named as the keys, each of that many repeated bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, n_bytes in members.items():
            write_repeated(archive, name, n_bytes)
    return path


def docx_bomb(path: Path, xml_bytes: int) -> Path:
    """A .docx-shaped zip whose ``word/document.xml`` unpacks to ``xml_bytes``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        write_repeated(archive, "word/document.xml", xml_bytes)
    return path
