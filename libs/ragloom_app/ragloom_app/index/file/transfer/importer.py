"""Make a file index from an export zip, read as hostile: :func:`import_index`."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
from sqlmodel import Session

from ragloom.schema import Chunk
from ragloom_app.db.models import LOCAL_USER, Source, SourceStatus
from ragloom_app.index.file.index import FileIndex
from ragloom_app.index.file.source_rows import record_indexed
from ragloom_app.index.file.transfer.format import (
    BATCH,
    EXPORT_FORMAT,
    FIXED_MEMBERS,
    STORED_MEMBER,
    ImportLimits,
    IndexTransferError,
    TransferReport,
)
from ragloom_app.index.manager import IndexManager

__all__ = ["import_index"]

logger = logging.getLogger(__name__)


def import_index(
    manager: IndexManager,
    source: Path,
    embedding: Mapping[str, Any],
    *,
    type_id: str,
    name: str | None = None,
    owner: str = LOCAL_USER,
    shared: bool = True,
    limits: ImportLimits | None = None,
) -> tuple[FileIndex, TransferReport]:
    """Make a new index of ``type_id`` (a file index type) in ``manager`` from the export
    ``source``, named as it was unless ``name`` is given; ``embedding`` is this
    deployment's :func:`embedding_identity`.

    Raises :class:`IndexTransferError` (and leaves no index behind) if the file is not an
    export, breaks a limit, or holds vectors of another model.
    """
    limits = limits or ImportLimits()
    try:
        archive = zipfile.ZipFile(source)
    except (OSError, zipfile.BadZipFile) as exc:
        raise IndexTransferError(f"{source.name} is not an index export: {exc}") from None
    with archive:
        manifest = _checked_manifest(archive, limits)
        warnings = _check_embedding(manifest["embedding"], embedding)
        if not issubclass(manager.index_types[type_id], FileIndex):
            raise IndexTransferError(f"an export is imported into a file index, not {type_id}")
        config = dict(manifest["index"]["config"])
        try:  # checked as the type checks a new index's, kept as it was written
            manager.normalize_config(type_id, config)
        except (ValueError, TypeError) as exc:
            raise IndexTransferError(f"the export's index settings are not usable: {exc}") from None
        wanted = name or str(manifest["index"]["name"])
        index = manager.create(wanted, type_id, config, owner=owner, shared=shared)
        assert isinstance(index, FileIndex)
        try:
            sources, chunks = _import_sources(index, archive, manifest, limits)
            index.fulltext_store.ensure_index()
        except BaseException:
            logger.warning("import of %s failed: deleting the index %r", source, index.name)
            manager.delete(index.id)
            raise
    return index, TransferReport(index.name, sources, chunks, warnings=tuple(warnings))


def _checked_manifest(archive: zipfile.ZipFile, limits: ImportLimits) -> dict[str, Any]:
    names = archive.namelist()
    strange = [n for n in names if n not in FIXED_MEMBERS and not STORED_MEMBER.fullmatch(n)]
    if strange or not set(names) >= FIXED_MEMBERS or len(names) != len(set(names)):
        shown = ", ".join(repr(n) for n in strange[:3]) or "missing or repeated members"
        raise IndexTransferError(f"not an index export: {shown}")
    total = sum(info.file_size for info in archive.infolist())
    if total > limits.max_bytes:
        raise IndexTransferError(
            f"the export unpacks to {total / 1e9:.1f} GB, "
            f"the limit is {limits.max_bytes / 1e9:.0f} GB"
        )
    try:
        manifest = json.loads(_read_bounded(archive, "manifest.json", limits.max_line_bytes))
        assert manifest["format"] == EXPORT_FORMAT, f"format {manifest['format']!r}"
        assert isinstance(manifest["index"]["name"], str)
        assert isinstance(manifest["index"]["config"], dict)
        dimension = manifest["embedding"]["dimension"]
        assert isinstance(dimension, int) and 0 < dimension <= 65536
        for key, limit in (("sources", limits.max_sources), ("chunks", limits.max_chunks)):
            assert isinstance(manifest[key], int) and 0 <= manifest[key] <= limit, key
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise IndexTransferError(f"the export's manifest is not usable: {exc}") from None
    expected = manifest["chunks"] * dimension * 4
    if archive.getinfo("vectors.f32").file_size != expected:
        raise IndexTransferError("the export's vectors do not match its chunks")
    return dict(manifest)


def _read_bounded(archive: zipfile.ZipFile, member: str, limit: int) -> bytes:
    with archive.open(member) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise IndexTransferError(f"{member} is larger than {limit} bytes")
    return data


def _check_embedding(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    for key in ("class", "model", "dimension"):
        if theirs.get(key) != ours.get(key):
            raise IndexTransferError(
                f"the export's vectors come from another embedding model ({key} "
                f"{theirs.get(key)!r}, this deployment has {ours.get(key)!r}): its answers "
                "would search the wrong space; import it where that model is the default"
            )
    return [
        f"the vectors were made with {key} {theirs.get(key)!r}, this deployment embeds "
        f"questions with {ours.get(key)!r}: close, not equal"
        for key in ("backend", "precision")
        if theirs.get(key) != ours.get(key)
    ]


def _lines(handle: IO[bytes], limit: int, what: str) -> Iterator[dict[str, Any]]:
    while line := handle.readline(limit + 1):
        if len(line) > limit:
            raise IndexTransferError(f"a line of {what} is longer than {limit} bytes")
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise IndexTransferError(f"{what} holds a line that is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise IndexTransferError(f"{what} holds a line that is not an object")
        yield record


def _import_sources(
    index: FileIndex, archive: zipfile.ZipFile, manifest: Mapping[str, Any], limits: ImportLimits
) -> tuple[int, int]:
    dimension = int(manifest["embedding"]["dimension"])
    sources = chunks = 0
    with (
        archive.open("sources.jsonl") as source_lines,
        archive.open("chunks.jsonl") as chunk_lines,
        archive.open("vectors.f32") as vector_bytes,
    ):
        records = _lines(chunk_lines, limits.max_line_bytes, "chunks.jsonl")
        for record in _lines(source_lines, limits.max_line_bytes, "sources.jsonl"):
            sources += 1
            if sources > manifest["sources"]:
                raise IndexTransferError("sources.jsonl holds more files than the manifest says")
            chunks += _import_source(index, archive, record, records, vector_bytes, dimension)
    if chunks != manifest["chunks"] or sources != manifest["sources"]:
        raise IndexTransferError("the export holds fewer files or chunks than its manifest says")
    return sources, chunks


def _import_source(
    index: FileIndex,
    archive: zipfile.ZipFile,
    record: Mapping[str, Any],
    chunk_records: Iterator[dict[str, Any]],
    vector_bytes: IO[bytes],
    dimension: int,
) -> int:
    try:
        name, digest = str(record["name"]), str(record["sha256"])
        count, suffix = int(record["chunks"]), str(record.get("suffix", ""))
        assert re.fullmatch(r"[0-9a-f]{64}", digest) and count >= 0
    except (AssertionError, KeyError, TypeError, ValueError):
        raise IndexTransferError(f"sources.jsonl holds a bad record: {record!r:.200}") from None
    source_id = uuid.uuid4().hex
    stored = index.files_dir / f"{digest}{suffix}"
    member = f"files/{digest}{suffix}"
    with Session(index.resources.engine) as session:
        session.add(
            Source(
                id=source_id,
                index_id=index.id,
                name=name,
                sha256=digest,
                size=int(record.get("size", 0)),
                status=SourceStatus.INDEXING,
                stored_path=str(stored) if member in archive.namelist() else None,
                attempts=1,
            )
        )
        session.commit()
    if member in archive.namelist():
        _copy_checked(archive, member, stored, digest)
    chunks: list[Chunk] = []
    for position in range(count):
        try:
            values = next(chunk_records)
            chunks.append(
                Chunk(
                    id=f"{source_id}-{position:05d}",
                    text=str(values["text"]),
                    source_id=source_id,
                    source_name=name,
                    page=None if values.get("page") is None else int(values["page"]),
                    start=int(values["start"]),
                    end=int(values["end"]),
                )
            )
        except StopIteration:
            raise IndexTransferError("chunks.jsonl ends before its files' chunks do") from None
        except (KeyError, TypeError, ValueError):
            raise IndexTransferError(f"chunks.jsonl holds a bad chunk of {name!r}") from None
    for start in range(0, count, BATCH):
        part = chunks[start : start + BATCH]
        raw = vector_bytes.read(len(part) * dimension * 4)
        matrix = np.frombuffer(raw, dtype="<f4").reshape(len(part), dimension)
        if not np.isfinite(matrix).all():
            raise IndexTransferError(f"a vector of {name!r} is not finite")
        index.vector_store.add(part, matrix.astype(np.float32))
        index.fulltext_store.add(part)
    flip = record_indexed(index.resources.engine, index.id, source_id, chunks)
    if not flip.done:
        raise IndexTransferError(f"{name!r} was removed while it was imported")
    # An export holding the same content twice (an index from before one source per
    # content was kept): the later copy replaces the earlier, as a reindex does.
    for earlier in flip.replaced:
        index.get_indexing_pipeline({}).remove(earlier)
    return count


def _copy_checked(archive: zipfile.ZipFile, member: str, target: Path, digest: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    hasher = hashlib.sha256()
    try:
        with archive.open(member) as handle, partial.open("wb") as out:
            while block := handle.read(1 << 20):
                hasher.update(block)
                out.write(block)
        if hasher.hexdigest() != digest:
            raise IndexTransferError(f"{member} does not match its sha256")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
