"""``/api/v1`` routes that change indices: create and delete one, upload files (indexed by
a job: follow it at ``/api/v1/jobs/{id}``, or poll the files' status), remove a file or
index it again, read a file's chunks; and the installed plugins.

A new index is its creator's, private unless ``shared``. Writing an index (its files, its
deletion) is for its owner, and for admins when it is shared; a user who may read an
index but not write it gets 403, one who may not even read it 404.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ragloom.byte_sizes import size_text
from ragloom_app.accounts import User
from ragloom_app.api.errors import ApiError, not_found
from ragloom_app.api.job_routes import JobOut, job_out
from ragloom_app.api.models import ERROR_RESPONSES, IndexOut
from ragloom_app.app import BaseApp
from ragloom_app.db.models import ChunkRecord
from ragloom_app.errors import disk_full_error
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.deletion import deletion_refused
from ragloom_app.index.file.names import UnsafeNameError, safe_display_name
from ragloom_app.index.manager import INDEX_NAME_PATTERN, MAX_INDEX_NAME_CHARS
from ragloom_app.jobs.staging import API_UPLOAD_PREFIX, api_upload_root

__all__ = ["index_router"]

logger = logging.getLogger(__name__)

MAX_CHUNKS_PER_PAGE = 500
MAX_OFFSET = 10**9
_COPY_BYTES = 1024 * 1024


class IndexCreate(BaseModel):
    """A new index."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_INDEX_NAME_CHARS, pattern=INDEX_NAME_PATTERN)
    type: str | None = Field(None, description="An index type (default: the first registered).")
    shared: bool = Field(
        False,
        description="Every user reads it (default: its creator only). Admins only: a shared "
        "index is searched by every user's questions.",
    )


class UploadOut(BaseModel):
    """Files taken for indexing by a job: follow it at ``/api/v1/jobs/{job.id}``."""

    index: str
    accepted: list[str]
    job: JobOut


class ChunkOut(BaseModel):
    """A chunk of a file: its text and where it lies in the file's text."""

    id: str
    page: int | None
    start: int
    end: int
    text: str


class PluginOut(BaseModel):
    """An installed plugin and what it registered."""

    name: str
    version: str | None
    disabled: bool
    registered: dict[str, list[str]]
    error: str | None


def index_router(
    app: BaseApp, current_user: Callable[[Request], User], index_out: Callable[..., IndexOut]
) -> APIRouter:
    """The routes of the module docstring."""
    router = APIRouter(
        prefix="/api/v1",
        responses={
            **ERROR_RESPONSES,
            403: {"description": "Not yours to change."},
            429: {"description": "Too many of the user's indexing jobs are queued."},
        },
        dependencies=[Depends(current_user)],
    )

    def readable(name: str, user: User) -> BaseIndex:
        for index in app.indices.readable_by(user.id):
            if index.name == name:
                return index
        raise not_found("index", name)

    def writable(name: str, user: User) -> BaseIndex:
        index = readable(name, user)
        if not app.indices.access(index).writable_by(user.id, user.is_admin):
            raise ApiError(403, "forbidden", f"the index {name!r} is not yours to change")
        return index

    def source(index: BaseIndex, file_id: str) -> dict[str, Any]:
        for entry in index.list_sources():
            if str(entry["id"]) == file_id:
                return entry
        raise not_found("file", file_id)

    @router.post(
        "/indices",
        status_code=201,
        tags=["indices"],
        responses={409: {"description": "An index of that name exists."}},
    )
    def create_index(body: IndexCreate, user: User = Depends(current_user)) -> IndexOut:
        """A new index, owned by the user (private unless ``shared``)."""
        type_id = body.type or next(iter(app.indices.index_types), None)
        if type_id is None or type_id not in app.indices.index_types:
            known = ", ".join(app.indices.index_types)
            raise ApiError(404, "not_found", f"no index type {body.type!r} (types: {known})")
        if body.shared and not user.is_admin:
            raise ApiError(403, "forbidden", "only an admin makes a shared index")
        config = app.indices.normalize_config(type_id, {})
        try:
            index = app.indices.create(
                body.name, type_id, config, owner=user.id, shared=body.shared
            )
        except (ValueError, IntegrityError):
            # The same words whoever owns the other one: its name, not that it exists.
            raise ApiError(409, "conflict", f"the name {body.name!r} is taken") from None
        return index_out(app, index)

    @router.delete("/indices/{name}", status_code=204, tags=["indices"])
    def delete_index(name: str, user: User = Depends(current_user)) -> Response:
        """Delete an index and everything it stored."""
        index = writable(name, user)
        if (refused := deletion_refused(app.jobs, index)) is not None:
            raise ApiError(409, "conflict", f"{name!r} cannot be deleted now: {refused}")
        app.indices.delete(index.id)  # the id: the object checked, never another by name
        return Response(status_code=204)

    @router.post(
        "/indices/{name}/files",
        status_code=202,
        tags=["indices"],
        openapi_extra={
            "requestBody": {
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "files": {
                                    "type": "array",
                                    "items": {"type": "string", "format": "binary"},
                                    "minItems": 1,
                                }
                            },
                            "required": ["files"],
                            "additionalProperties": False,
                        }
                    }
                },
                "required": True,
            }
        },
    )
    async def upload(name: str, request: Request, user: User = Depends(current_user)) -> UploadOut:
        """Upload files (multipart, field ``files``, several at once) to be indexed by a job;
        follow it at ``/api/v1/jobs/{id}`` (the files' status also shows in GET .../files)."""
        # Async only to read the body as it streams in; the database, the queue and the
        # disk are worked on in a thread, never on the server's event loop (a queue that
        # waited for its database there held every other request of the process).
        index = await run_in_threadpool(writable, name, user)
        # Before the body is read: an upload past MAX_JOBS_PER_USER is refused (429) without
        # first being received whole and written to the data folder.
        await run_in_threadpool(app.jobs.check_room, user.id)
        limit = app.settings.max_files_per_upload
        try:
            form = await request.form(max_files=limit, max_fields=limit)
        except Exception as exc:  # starlette: too many files, a malformed body
            # It spools the parts to the temp folder: a full disk there is no bad request.
            if (full := disk_full_error(exc, "the upload could not be read")) is not None:
                raise full from exc
            raise ApiError(422, "invalid_request", f"the upload cannot be read: {exc}") from None
        uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
        if not uploads:
            raise ApiError(422, "invalid_request", "no files in the field 'files'")
        for position, upload in enumerate(uploads):
            # Before a byte is staged: the name is kept whole in the job's row and shown
            # in every listing of the job, and the index would refuse it anyway. Measured
            # as the index keeps it (NFC, folders and invisible characters dropped): a
            # macOS name (NFD) or 'reports/2026/q3.pdf' is longer as sent. The job keeps
            # the name sent; the index applies its rule as it indexes the file.
            if not upload.filename:
                continue  # named by its position (submit)
            try:
                safe_display_name(upload.filename)
            except UnsafeNameError as exc:
                raise ApiError(
                    422,
                    "invalid_request",
                    f"file {position + 1} of the upload is refused: {exc}: nothing of the "
                    "upload was taken",
                    param=f"files[{position}]",
                ) from None
        return await run_in_threadpool(submit, index, user, uploads)

    def submit(index: BaseIndex, user: User, uploads: list[UploadFile]) -> UploadOut:
        """Copy the uploads out of the request (each under a name of its position, never
        one the client sent) and submit them as one job."""
        try:
            # Removed below; left only by a killed process, for the sweepers (staging.py).
            folder = Path(tempfile.mkdtemp(prefix=API_UPLOAD_PREFIX, dir=_upload_dir(app)))
            try:
                staged = []
                for position, upload in enumerate(uploads):
                    name = upload.filename or f"upload-{position}"
                    path = folder / f"{position}"
                    with path.open("wb") as out:
                        _copy_upload(upload.file, out, name, app.settings.max_file_bytes)
                    staged.append((name, path))
                job = app.jobs.submit_files(index, user.id, staged, move=True)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError as exc:
            full = disk_full_error(exc, "the upload could not be copied out of the request")
            if full is None:
                raise
            raise full from exc
        names = [name for name, _ in staged]
        return UploadOut(index=index.name, accepted=names, job=job_out(app, job))

    @router.delete("/indices/{name}/files/{file_id}", status_code=204, tags=["indices"])
    def remove_file(name: str, file_id: str, user: User = Depends(current_user)) -> Response:
        """Remove a file from every store of the index."""
        index = writable(name, user)
        source(index, file_id)
        index.remove_source(file_id)
        return Response(status_code=204)

    @router.post("/indices/{name}/files/{file_id}/reindex", status_code=202, tags=["indices"])
    def reindex_file(name: str, file_id: str, user: User = Depends(current_user)) -> UploadOut:
        """Index a file again from its stored copy, by a job (follow it, or poll the
        file's status)."""
        index = writable(name, user)
        entry = source(index, file_id)
        if type(index).reindex_source is BaseIndex.reindex_source:
            raise ApiError(
                422, "invalid_request", f"a {type(index).__name__} cannot index a file again"
            )
        job = app.jobs.submit_reindex(index, user.id, [(str(entry["name"]), file_id)])
        return UploadOut(index=index.name, accepted=[str(entry["name"])], job=job_out(app, job))

    @router.get("/indices/{name}/files/{file_id}/chunks", tags=["indices"])
    def chunks(
        name: str,
        file_id: str,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_CHUNKS_PER_PAGE)] = 100,
        user: User = Depends(current_user),
    ) -> list[ChunkOut]:
        """The chunks of a file in the order they lie in it (at most 500 at a time)."""
        index = readable(name, user)
        source(index, file_id)
        with Session(app.engine) as session:
            rows = session.exec(
                select(ChunkRecord)
                .where(ChunkRecord.index_id == index.id, ChunkRecord.source_id == file_id)
                .order_by(col(ChunkRecord.start))
                .offset(offset)
                .limit(limit)
            )
            return [
                ChunkOut(id=r.id, page=r.page, start=r.start, end=r.end, text=r.text) for r in rows
            ]

    @router.get("/plugins", tags=["server"])
    def plugins() -> list[PluginOut]:
        """The installed plugins and what each registered."""
        return [
            PluginOut(
                name=info.name,
                version=info.version,
                disabled=info.disabled,
                registered={kind: list(ids) for kind, ids in info.registered.items()},
                error=info.error,
            )
            for info in app.plugins
        ]

    return router


def _copy_upload(source: IO[bytes], target: IO[bytes], name: str, max_bytes: int) -> None:
    """Copy the uploaded file ``name`` out of the request into ``target``; a 413 as soon as
    it holds more than ``max_bytes`` (MAX_FILE_BYTES), rather than a job that fails it
    once the whole upload is staged."""
    copied = 0
    while chunk := source.read(_COPY_BYTES):
        copied += len(chunk)
        if copied > max_bytes:
            raise ApiError(
                413,
                "request_too_large",
                f"the file {name!r} is larger than {size_text(max_bytes)}, the limit for one "
                "file (MAX_FILE_BYTES): nothing of the upload was taken",
                param="files",
            )
        target.write(chunk)


def _upload_dir(app: BaseApp) -> Path:
    folder = api_upload_root(app.settings.data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder
