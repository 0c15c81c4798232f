"""Write a file index to an export zip: :func:`export_index`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
from sqlmodel import Session, col, select

from ragloom_app.db.models import ChunkRecord, Source, SourceStatus
from ragloom_app.index.file.index import FileIndex
from ragloom_app.index.file.recovery import stored_here
from ragloom_app.index.file.transfer.format import (
    EXPORT_FORMAT,
    IndexTransferError,
    TransferReport,
)
from ragloom_app.stop_signals import stop_deferred

__all__ = ["export_index"]


def export_index(
    index: FileIndex, target: Path, embedding: Mapping[str, Any], *, overwrite: bool = False
) -> TransferReport:
    """Write ``index`` to the zip ``target`` (see the module docs); ``embedding`` is
    :func:`embedding_identity` of the model its vectors were made with. A file already at
    ``target`` is refused unless ``overwrite``; so is an index an import is still filling
    or left half made (its copy would look whole).

    Raises :class:`IndexTransferError` saying why when it cannot be written (no such
    folder, a name too long, no permission, the disk full).
    """
    try:
        return _export(index, target, embedding, overwrite)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = Path(exc.filename) if isinstance(exc.filename, str) else None
        if where is not None and stored_here(where, index):  # a stored copy
            raise IndexTransferError(f"cannot read {str(where)!r}: {reason}") from None
        raise IndexTransferError(f"cannot write {str(target)!r}: {reason}") from None


def _export(
    index: FileIndex, target: Path, embedding: Mapping[str, Any], overwrite: bool
) -> TransferReport:
    if not target.parent.is_dir():
        raise IndexTransferError(f"no folder {str(target.parent)!r} to write the export in")
    if target.is_dir():
        raise IndexTransferError(f"{str(target)!r} is a folder: name the export's file")
    _refuse_unless_regular(target)
    if target.exists() and not overwrite:  # checked first: an export may take minutes
        raise _exists(target)
    _refuse_half_imported(index)
    engine = index.resources.engine
    with Session(engine) as session:
        sources = list(
            session.exec(
                select(Source)
                .where(Source.index_id == index.id)
                .order_by(col(Source.created_at), col(Source.id))
            )
        )
    indexed = [s for s in sources if s.status == SourceStatus.INDEXED]
    chunks_written = 0
    # A zip is written one member at a time: the three streams go to files first. The
    # zip itself too is made in this folder beside the target (so it is renamed, never
    # copied, into place), under a short name: one derived from the target's was longer
    # than the file system takes when the target's name was near its limit.
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".export-"))
    partial = work / "export.zip"
    try:
        members = {n: work / n for n in ("sources.jsonl", "chunks.jsonl", "vectors.f32")}
        with (
            members["sources.jsonl"].open("wb") as source_lines,
            members["chunks.jsonl"].open("wb") as chunk_lines,
            members["vectors.f32"].open("wb") as vectors,
        ):
            for source in list(indexed):
                count = _export_source(index, source, chunk_lines, vectors, embedding)
                if count is None:  # removed or indexed again since the list was read
                    indexed.remove(source)
                    continue
                source_lines.write(_line(_source_record(source, count)))
                chunks_written += count
        _write_zip(partial, members, indexed, index, embedding, chunks_written)
        _put(partial, target, overwrite)
    finally:
        # What is left holds every chunk's text: a stop signal (under the CLI's
        # stop_signals_raise) waits until it is gone, rather than cut its removal short.
        with stop_deferred():
            shutil.rmtree(work, ignore_errors=True)  # the unfinished zip with the rest
    return TransferReport(index.name, len(indexed), chunks_written, len(sources) - len(indexed))


def _refuse_half_imported(index: FileIndex) -> None:
    """Refuse an index an import has not finished: its export would carry no mark of
    that, and be imported elsewhere as a whole index. (An import always makes a new
    index, so one not being imported now cannot start being while it is exported.)"""
    state = index.import_state()
    if state == "under way":
        raise IndexTransferError(
            f"an import is still filling {index.name!r}: export it once the import has ended"
        )
    if state == "interrupted":
        raise IndexTransferError(
            f"{index.name!r} is half made: the import that was filling it was killed before "
            "every file was in; `ragloom index check --repair` deletes it (import its export "
            "again)"
        )


def _refuse_unless_regular(target: Path) -> None:
    """Refuse a ``target`` that is there and is no regular file: a link, a pipe, a device.
    The export is renamed over its name, which replaces the link (as root, ``/dev/stdout``
    is one) or the pipe itself, never writes where it leads: ``--force`` is for a file."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise IndexTransferError(
            f"{str(target)!r} is not a regular file (a link, a pipe or a device): name another file"
        )


def _exists(target: Path) -> IndexTransferError:
    return IndexTransferError(
        f"{str(target)!r} exists: name another file, or --force to replace it"
    )


def _put(partial: Path, target: Path, overwrite: bool) -> None:
    """Give the finished export ``partial`` its name ``target``; unless ``overwrite``,
    never over a file that is there (made while the export ran)."""
    if overwrite:
        _refuse_unless_regular(target)  # again: one may have been made while it ran
        partial.replace(target)
        return
    try:
        os.link(partial, target)  # refused if the name is taken, where a rename replaces
    except FileExistsError:
        raise _exists(target) from None
    except OSError:  # a file system without hard links: looked at, then renamed
        if os.path.lexists(target):  # a link leading nowhere has the name too
            raise _exists(target) from None
        partial.replace(target)


def _write_zip(
    target: Path,
    members: Mapping[str, Path],
    indexed: list[Source],
    index: FileIndex,
    embedding: Mapping[str, Any],
    chunks: int,
) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for name, path in members.items():
            archive.write(path, name)
        written: set[str] = set()
        for source in indexed:
            stored = _stored(source)
            name = f"files/{source.sha256}{stored.suffix.lower()}"
            if name in written:  # two files of one content (an index of before one per content)
                continue
            if not stored.is_file():  # removed since its chunks were written
                raise IndexTransferError(
                    f"{source.name!r} was removed while the export ran: export the index again"
                )
            archive.write(stored, name)
            written.add(name)
        manifest = {
            "format": EXPORT_FORMAT,
            "exported_at": datetime.now(UTC).isoformat(),
            "index": {"name": index.name, "type": "file", "config": index.config},
            "embedding": dict(embedding),
            "sources": len(indexed),
            "chunks": chunks,
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))


def _source_record(source: Source, chunks: int) -> dict[str, Any]:
    return {
        "name": source.name,
        "sha256": source.sha256,
        "size": source.size,
        "suffix": _stored(source).suffix.lower(),
        "chunks": chunks,
    }


def _export_source(
    index: FileIndex, source: Source, lines: IO[bytes], vectors: IO[bytes], embedding: Any
) -> int | None:
    """Write one file's chunks and vectors; its chunk count, or ``None`` if it is no
    longer indexed (removed, or replaced by its new version, while the export ran)."""
    with Session(index.resources.engine) as session:
        rows = list(
            session.exec(
                select(ChunkRecord)
                .where(ChunkRecord.source_id == source.id)
                .order_by(col(ChunkRecord.id))  # f"{source_id}-{n:05d}": the file's order
            )
        )
    found = index.vector_store.vectors([r.id for r in rows])
    missing = [r.id for r in rows if r.id not in found]
    if (missing or not rows) and not _still_indexed(index, source):
        return None
    if missing:
        raise IndexTransferError(
            f"{source.name!r} has {len(missing)} chunks without a vector: run "
            f"`ragloom index check --index {index.name!r} --repair` first"
        )
    if not _stored(source).is_file():  # an import refuses a file without its copy
        if not _still_indexed(index, source):
            return None
        if not stored_here(_stored(source), index):
            raise IndexTransferError(
                f"{source.name!r} was stored through another data folder (another app "
                "process's): export the index there, or share the data folder between them"
            )
        raise IndexTransferError(
            f"the stored copy of {source.name!r} is missing from the data folder: run "
            f"`ragloom index check --index {index.name!r} --repair` first"
        )
    for row in rows:
        lines.write(_line({"text": row.text, "page": row.page, "start": row.start, "end": row.end}))
        vector = np.asarray(found[row.id], dtype="<f4")
        if vector.shape != (embedding["dimension"],):
            raise IndexTransferError(f"a vector of {source.name!r} has shape {vector.shape}")
        vectors.write(vector.tobytes())
    return len(rows)


def _stored(source: Source) -> Path:
    """Where the stored copy of ``source`` is (a path that is no file when it has none)."""
    return Path(source.stored_path or "")


def _still_indexed(index: FileIndex, source: Source) -> bool:
    with Session(index.resources.engine) as session:
        current = session.get(Source, source.id)
    return current is not None and current.status == SourceStatus.INDEXED


def _line(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
