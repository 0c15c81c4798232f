"""The records of an export read as hostile: each line of ``sources.jsonl`` and
``chunks.jsonl`` checked as the upload of a file, or the chunks of one, would be."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ragloom.byte_sizes import size_text
from ragloom.schema import Chunk
from ragloom.storable import storable_text
from ragloom_app.index.file.archives import ARCHIVE_SUFFIXES, member_display_name
from ragloom_app.index.file.names import (
    MAX_PATH_LENGTH,
    UnsafeNameError,
    clean_name,
    safe_display_name,
)
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.transfer.format import STORED_MEMBER, IndexTransferError

__all__ = ["SourceFields", "bounded", "checked_name", "chunk_of", "json_lines", "type_refusal"]

_MAX_OFFSET = 2**31 - 1  # a page or a character offset: PostgreSQL's integer


def json_lines(handle: IO[bytes], limit: int, what: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of ``handle``, one a line of at most ``limit`` bytes; ``what``
    names the member in the errors."""
    while line := handle.readline(limit + 1):
        if len(line) > limit:
            raise IndexTransferError(f"a line of {what} is longer than {limit} bytes")
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise IndexTransferError(f"{what} holds a line that is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise IndexTransferError(f"{what} holds a line that is not an object")
        yield record


@dataclass(frozen=True)
class SourceFields:
    """One record of ``sources.jsonl``, checked as a new upload's file is."""

    name: str
    digest: str
    count: int
    size: int
    """Its stored copy's size in the export (which the record must state)."""
    member: str
    """Its stored copy in the export (``files/<sha256><suffix>``)."""
    suffix: str

    @classmethod
    def of(
        cls,
        record: Mapping[str, Any],
        pipeline: FileIndexingPipeline,
        archive: zipfile.ZipFile,
        room: int,
    ) -> SourceFields:
        """The record's fields; ``room`` is how many chunks the manifest leaves."""
        try:
            digest, suffix = str(record["sha256"]), str(record.get("suffix", ""))
            count, recorded = bounded(record["chunks"], 2**62), bounded(record["size"], 2**62)
            assert re.fullmatch(r"[0-9a-f]{64}", digest) and STORED_MEMBER.fullmatch(
                f"files/{digest}{suffix}"
            )
            name = checked_name(record["name"])
        except (AssertionError, KeyError, TypeError, ValueError, OverflowError) as exc:
            why = f" ({exc})" if isinstance(exc, UnsafeNameError) else ""
            raise IndexTransferError(
                f"sources.jsonl holds a bad record{why}: {record!r:.200}"
            ) from None
        refusal = type_refusal(name, pipeline)
        if refusal:  # what an upload of the file would be refused for
            raise IndexTransferError(
                f"the export holds {name!r}, which this index refuses: {refusal}"
            )
        if suffix != PurePosixPath(name).suffix.lower():
            # The stored copy's type picks its reader when the file is indexed again.
            raise IndexTransferError(
                f"the stored copy of {name!r} is of another type ({suffix or 'none'}) than "
                "its name: the export was altered"
            )
        # Checked before any chunk is read: a record may claim millions.
        if count > room:
            raise IndexTransferError(f"{name!r} has more chunks than the manifest leaves")
        if count > pipeline.ingestor.max_chunks:
            raise IndexTransferError(
                f"{name!r} has {count} chunks; this deployment's limit for one file is "
                f"{pipeline.ingestor.max_chunks} (MAX_FILE_CHUNKS)"
            )
        member = f"files/{digest}{suffix}"
        if member not in archive.NameToInfo:
            # Imported, it would be an indexed file that `index check --repair` fails: a
            # file is indexed again, and checked, from its stored copy.
            raise IndexTransferError(
                f"the export holds no stored copy of {name!r} ({member}): it is incomplete; "
                "export the index again"
            )
        size = archive.getinfo(member).file_size
        if size > pipeline.max_file_bytes:
            raise IndexTransferError(
                f"the stored copy of {name!r} is larger than this deployment's limit for a "
                f"file ({size_text(pipeline.max_file_bytes)})"
            )
        # The size kept is the copy's (bounded just above), never the record's word; a
        # record that says another was altered (an export writes the copy's own).
        if recorded != size:
            raise IndexTransferError(
                f"{name!r} is recorded as {recorded} bytes, its stored copy has {size}: the "
                "export was altered"
            )
        return cls(name, digest, count, size, member, suffix)


def checked_name(raw: object) -> str:
    """``raw`` as an upload names a file: its name without folders, or an archive
    member's (``notes.zip/folder/x.md``), each part cleaned as an upload's is.

    Raises :class:`UnsafeNameError` for a name no upload makes.
    """
    if not isinstance(raw, str) or len(raw) > MAX_PATH_LENGTH:
        raise ValueError("a file name")
    top, slash, member = raw.partition("/")
    name = clean_name(top)
    if safe_display_name(top) != name:  # C:\docs\a.md: an upload keeps "a.md" alone
        raise UnsafeNameError("the file name has folders in it")
    if not slash:
        return name
    if Path(name).suffix.lower() not in ARCHIVE_SUFFIXES:
        raise UnsafeNameError(f"the file name has folders in it, yet {name!r} is not an archive")
    return member_display_name(name, member)


def type_refusal(name: str, pipeline: FileIndexingPipeline) -> str | None:
    """Why an upload of the file ``name`` (a member: of its archive) would be refused for
    its type by the index ``pipeline`` writes, or ``None``."""
    if Path(name).suffix.lower() in ARCHIVE_SUFFIXES:
        # An archive is indexed as its members, and one inside an archive not at all.
        return "an archive is indexed as the files it holds, never whole"
    archive, slash, _ = name.partition("/")
    return (pipeline.type_refusal(archive) if slash else None) or pipeline.type_refusal(name)


def bounded(value: object, limit: int) -> int:
    """``value`` as an integer from 0 to ``limit``: JSON holds floats, huge numbers, text."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"{value!r:.40} is not a whole number from 0 to {limit}")
    return value


def chunk_of(values: dict[str, Any] | None, source_id: str, name: str, position: int) -> Chunk:
    """One line of ``chunks.jsonl`` as the chunk ``position`` of the file ``name``."""
    if values is None:
        raise IndexTransferError("chunks.jsonl ends before its files' chunks do")
    try:
        text = values["text"]
        assert isinstance(text, str)
        page = values.get("page")
        return Chunk(
            id=f"{source_id}-{position:05d}",
            text=storable_text(text),
            source_id=source_id,
            source_name=name,
            page=None if page is None else bounded(page, _MAX_OFFSET),
            start=bounded(values["start"], _MAX_OFFSET),
            end=bounded(values["end"], _MAX_OFFSET),
        )
    except (AssertionError, KeyError, TypeError, ValueError):
        raise IndexTransferError(f"chunks.jsonl holds a bad chunk of {name!r}") from None
