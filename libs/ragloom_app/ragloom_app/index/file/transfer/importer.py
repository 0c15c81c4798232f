"""Make a file index from an export zip, read as hostile: :func:`import_index`."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
from sqlmodel import Session

from ragloom.byte_sizes import size_text
from ragloom_app.conversation_holds import live_hold
from ragloom_app.db.models import LOCAL_USER, Source, SourceStatus
from ragloom_app.index.file.import_marks import mark_import
from ragloom_app.index.file.index import FileIndex
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.index.file.recovery import IMPORT_LOCK
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
from ragloom_app.index.file.transfer.records import SourceFields, chunk_of, json_lines
from ragloom_app.index.file.worklock import WorkLock
from ragloom_app.index.manager import IndexManager
from ragloom_app.stop_signals import stop_deferred

__all__ = ["import_index"]

logger = logging.getLogger(__name__)

_ENCRYPTED = 0x1  # the zip's general purpose flag for an encrypted member
_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what an export writes
# What reading a member raises when its bytes are damaged; caught where they are read.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError)


def import_index(
    manager: IndexManager,
    source: Path,
    embedding: Mapping[str, Any],
    *,
    type_id: str,
    name: str | None = None,
    owner: str = LOCAL_USER,
    shared: bool | None = None,
    limits: ImportLimits | None = None,
) -> tuple[FileIndex, TransferReport]:
    """Make a new index of ``type_id`` (a file index type) in ``manager`` from the export
    ``source``, named as it was unless ``name`` is given; ``embedding`` is this
    deployment's :func:`embedding_identity`. It is ``owner``'s, shared with every user if
    ``shared``, else private to ``owner``; by default as the exported index was.

    Raises :class:`IndexTransferError` (and leaves no index behind) if the file is not an
    export, breaks a limit, or holds vectors of another model.
    """
    limits = limits or ImportLimits()
    try:
        archive = zipfile.ZipFile(source)
    except (OSError, zipfile.BadZipFile) as exc:
        raise IndexTransferError(f"{source.name} is not an index export: {exc}") from None
    # The import's hold, live in this process while it runs: the new index's row names it.
    with archive, live_hold() as holder:
        manifest = _checked_manifest(archive, limits)
        warnings = _check_embedding(manifest["embedding"], embedding)
        if not issubclass(manager.index_types[type_id], FileIndex):
            raise IndexTransferError(f"an export is imported into a file index, not {type_id}")
        written = dict(manifest["index"]["config"])
        try:  # kept as the type checks and types a new index's ("300" was kept as text)
            config = manager.normalize_config(type_id, written)
        except (ValueError, TypeError) as exc:
            raise IndexTransferError(f"the export's index settings are not usable: {exc}") from None
        if shared is None:  # from what was written: the normalized settings add defaults
            shared = _exported_shared(written)
        # An empty name given is the manager's to refuse, never passed over for this one.
        wanted = str(manifest["index"]["name"]) if name is None else name
        made: tuple[FileIndex, WorkLock] | None = None
        try:
            # A stop (SIGTERM) between the steps would leave an index nothing tells is half
            # made: it waits, and is raised here, where the clean-up sees it.
            with stop_deferred():
                # Its owner's alone until every file is in: nobody else searches half an
                # index (one an import killed outright leaves so, for its owner to delete).
                index = manager.create(wanted, type_id, config, owner=owner, shared=False)
                assert isinstance(index, FileIndex)
                # Held until every file is in: what a process killed outright leaves (the
                # marks, nobody holding them) tells `index list` and `index check` of any
                # data folder that the index is half made, and `index check --repair`
                # deletes it (import_marks).
                mark = index.work_locks.lock(IMPORT_LOCK)
                made = (index, mark)
                mark.acquire_new()
                mark_import(manager.engine, index.id, holder)
            try:
                sources, chunks = _import_sources(index, archive, manifest, limits)
            except _DAMAGED as exc:  # read as it is used: a bad CRC, a broken deflate
                raise IndexTransferError(f"the export is damaged: {exc}") from None
            index.fulltext_store.ensure_index()
            if shared:
                manager.share(index)
            mark_import(manager.engine, index.id, None)
        except BaseException:
            if made is not None:
                _delete_half_made(manager, *made, source)
            raise
        mark.release()
    return index, TransferReport(index.name, sources, chunks, warnings=tuple(warnings))


def _delete_half_made(
    manager: IndexManager, index: FileIndex, mark: WorkLock, source: Path
) -> None:
    """Delete the index a failed or stopped import had begun, to the end (a stop signal
    meanwhile waits); one that cannot be deleted keeps its mark, for `index check
    --repair` to find."""
    with stop_deferred():
        logger.warning("import of %s failed: deleting the index %r", source, index.name)
        try:
            manager.delete(index.id)
        except Exception:  # often what failed the import (a server away): say the first
            logger.exception("the half-imported index %r could not be deleted", index.name)
            mark.release(keep_file=True)
        else:
            mark.release()


def _exported_shared(config: Mapping[str, Any]) -> bool:
    """Whether the exported index was shared, as its settings say: a private one stays
    private (its export may reach a deployment of many users)."""
    # An index of before the setting has none: those were all shared.
    return config.get("visibility", "shared") == "shared"


def _checked_manifest(archive: zipfile.ZipFile, limits: ImportLimits) -> dict[str, Any]:
    names = archive.namelist()
    strange = [n for n in names if n not in FIXED_MEMBERS and not STORED_MEMBER.fullmatch(n)]
    if strange or not set(names) >= FIXED_MEMBERS or len(names) != len(set(names)):
        shown = ", ".join(repr(n) for n in strange[:3]) or "missing or repeated members"
        raise IndexTransferError(f"not an index export: {shown}")
    odd = [
        info.filename
        for info in archive.infolist()
        if info.flag_bits & _ENCRYPTED or info.compress_type not in _COMPRESSIONS
    ]
    if odd:
        raise IndexTransferError(f"{odd[0]!r} is encrypted or compressed in a way exports are not")
    total = sum(info.file_size for info in archive.infolist())
    if total > limits.max_bytes:
        raise IndexTransferError(
            f"the export unpacks to {size_text(total)}, the limit is {size_text(limits.max_bytes)}"
        )
    try:
        raw = _read_bounded(archive, "manifest.json", limits.max_line_bytes)
    except _DAMAGED as exc:  # read first, before the members checked as they are used
        raise IndexTransferError(f"the export is damaged: {exc}") from None
    try:
        manifest = json.loads(raw)
        assert manifest["format"] == EXPORT_FORMAT, f"format {manifest['format']!r}"
        assert isinstance(manifest["index"]["name"], str)
        assert isinstance(manifest["index"]["config"], dict)
        dimension = manifest["embedding"]["dimension"]
        assert isinstance(dimension, int) and 0 < dimension <= 65536
        for key, limit in (("sources", limits.max_sources), ("chunks", limits.max_chunks)):
            assert isinstance(manifest[key], int) and 0 <= manifest[key] <= limit, key
    # RecursionError: JSON nested deeper than Python's stack (``[[[[...]]]]``).
    except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
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


def _import_sources(
    index: FileIndex, archive: zipfile.ZipFile, manifest: Mapping[str, Any], limits: ImportLimits
) -> tuple[int, int]:
    dimension = int(manifest["embedding"]["dimension"])
    pipeline = index.get_indexing_pipeline({})
    sources = chunks = replaced = 0
    named: set[str] = set()
    with (
        archive.open("sources.jsonl") as source_lines,
        archive.open("chunks.jsonl") as chunk_lines,
        archive.open("vectors.f32") as vector_bytes,
    ):
        records = json_lines(chunk_lines, limits.max_line_bytes, "chunks.jsonl")
        for record in json_lines(source_lines, limits.max_line_bytes, "sources.jsonl"):
            sources += 1
            if sources > manifest["sources"]:
                raise IndexTransferError("sources.jsonl holds more files than the manifest says")
            fields = SourceFields.of(record, pipeline, archive, manifest["chunks"] - chunks)
            replaced += _import_source(pipeline, archive, fields, records, vector_bytes, dimension)
            chunks += fields.count
            named.add(fields.member)
        if next(records, None) is not None:
            raise IndexTransferError("chunks.jsonl holds more chunks than its files have")
    if chunks != manifest["chunks"] or sources != manifest["sources"]:
        raise IndexTransferError("the export holds fewer files or chunks than its manifest says")
    # What an export holds is read whole or refused: nothing in it is left unread.
    unnamed = sorted(set(archive.namelist()) - FIXED_MEMBERS - named)
    if unnamed:
        raise IndexTransferError(f"the export holds {unnamed[0]!r}, which no file names")
    return sources - replaced, chunks


def _import_source(
    pipeline: FileIndexingPipeline,
    archive: zipfile.ZipFile,
    fields: SourceFields,
    chunk_records: Iterator[dict[str, Any]],
    vector_bytes: IO[bytes],
    dimension: int,
) -> int:
    """Import one file; how many earlier files of the same content it replaced."""
    source_id = uuid.uuid4().hex
    stored = pipeline.files_dir / f"{fields.digest}{fields.suffix}"
    # Held as an upload's file is (its row ``indexing``, its partial copy): another
    # process's start or `index check --repair` leaves them to this one.
    with pipeline.work_locks.lock(source_id):
        with Session(pipeline.engine) as session:
            session.add(
                Source(
                    id=source_id,
                    index_id=pipeline.index_id,
                    name=fields.name,
                    sha256=fields.digest,
                    size=fields.size,
                    status=SourceStatus.INDEXING,
                    stored_path=str(stored),
                    attempts=1,
                )
            )
            session.commit()
        _copy_checked(archive, fields.member, stored, pipeline.partial_path(source_id))
        chunks, text_left = [], 2 * pipeline.max_file_bytes  # what the largest file may make
        for position in range(fields.count):
            chunks.append(chunk_of(next(chunk_records, None), source_id, fields.name, position))
            text_left -= len(chunks[-1].text)
            if text_left < 0:  # the chunks are held until the file's rows are written
                raise IndexTransferError(
                    f"the chunks of {fields.name!r} hold more text than a file within this "
                    f"deployment's limit ({size_text(pipeline.max_file_bytes)}) makes"
                )
        for start in range(0, fields.count, BATCH):
            part = chunks[start : start + BATCH]
            raw = vector_bytes.read(len(part) * dimension * 4)
            matrix = np.frombuffer(raw, dtype="<f4").reshape(len(part), dimension)
            if not np.isfinite(matrix).all():
                raise IndexTransferError(f"a vector of {fields.name!r} is not finite")
            pipeline.ingestor.write(part, matrix.astype(np.float32))
        flip = record_indexed(pipeline.engine, pipeline.index_id, source_id, chunks)
    if not flip.done:
        raise IndexTransferError(f"{fields.name!r} was removed while it was imported")
    # An export holding the same content twice (an index from before one source per
    # content was kept): the later copy replaces the earlier, as a reindex does.
    for earlier in flip.replaced:
        pipeline.remove(earlier)
    return len(flip.replaced)


def _copy_checked(archive: zipfile.ZipFile, member: str, target: Path, partial: Path) -> None:
    """Copy ``member`` to ``target`` through ``partial`` if it has the sha256 it is named by."""
    digest = member.removeprefix("files/")[:64]
    target.parent.mkdir(parents=True, exist_ok=True)
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
