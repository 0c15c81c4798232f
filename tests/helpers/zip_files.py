"""Zip archives built byte by byte for the archive tests: members as given, headers patched
to lie, and every file a test left behind."""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

# (signature, offset of the name length, offset of the name, offsets of patched fields)
LOCAL_HEADER = (b"PK\x03\x04", 26, 30, {"flags": (6, "<H"), "size": (22, "<I")})
CENTRAL_HEADER = (b"PK\x01\x02", 28, 46, {"flags": (8, "<H"), "size": (24, "<I")})


def zip_of(path: Path, members: dict[str, bytes | str], *, stored: bool = False) -> Path:
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return path


def patch_header(path: Path, name: str, field: str, change: Callable[[int], int]) -> None:
    """Rewrite ``field`` of member ``name`` in both its local and central headers.

    zipfile resets flag bits and computes sizes when writing, so archives with an
    encryption flag or a lying size are made by editing the bytes afterwards.
    """
    data = bytearray(path.read_bytes())
    encoded = name.encode()
    patched = 0
    for signature, length_at, name_at, fields in (LOCAL_HEADER, CENTRAL_HEADER):
        offset, fmt = fields[field]
        start = 0
        while (at := data.find(signature, start)) != -1:
            start = at + 4
            (length,) = struct.unpack_from("<H", data, at + length_at)
            if bytes(data[at + name_at : at + name_at + length]) != encoded:
                continue
            (value,) = struct.unpack_from(fmt, data, at + offset)
            struct.pack_into(fmt, data, at + offset, change(value))
            patched += 1
    assert patched == 2, f"{name}: found {patched} headers"
    path.write_bytes(bytes(data))


def all_files(root: Path) -> set[Path]:
    return {Path(d, f) for d, _, files in os.walk(root) for f in files}
