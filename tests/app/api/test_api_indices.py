"""The HTTP API's indices and their files, against a live server: listing, settings, indexing
again, uploads and what refuses one (the user's queued jobs, a file's size, a name's length,
a full disk), and deletion."""

from __future__ import annotations

import errno
import shutil
import time
import unicodedata
from typing import Any

import httpx
import pytest
from starlette.datastructures import UploadFile
from starlette.requests import Request

from ragloom_app.api import index_routes
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.worklock import WorkLock
from tests.helpers.api_server import LiveServer, api, live_server

__all__ = ["api", "live_server"]


def _job_ids(api: httpx.Client) -> list[str]:
    return [job["id"] for job in api.get("/jobs").json()]


def _assert_nothing_taken(
    live_server: LiveServer, api: httpx.Client, jobs_before: list[str]
) -> None:
    """A refused upload made no job and left no upload folder or staged file behind."""
    assert _job_ids(api) == jobs_before
    data_dir = live_server.app.settings.data_dir
    assert not list((data_dir / "uploads").glob("api-upload-*"))
    assert not list((data_dir / "jobs").glob("*"))


def test_indices_and_their_files(api: httpx.Client) -> None:
    indices = api.get("/indices").json()
    assert [i["name"] for i in indices] == ["My files"] and indices[0]["files"] == 2
    files = api.get("/indices/My files/files").json()
    assert sorted(f["name"] for f in files) == ["canteen.md", "reactor.md"]
    assert all(f["status"] == "indexed" and f["chunks"] >= 1 for f in files)
    missing = api.get("/indices/nope/files")
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "code": "not_found",
        "message": "no index 'nope'",
        "type": "not_found_error",
        "param": None,
    }


def test_one_file_and_an_indexs_settings(api: httpx.Client) -> None:
    (reactor,) = [f for f in api.get("/indices/My files/files").json() if f["name"] == "reactor.md"]
    assert api.get(f"/indices/My files/files/{reactor['id']}").json() == reactor
    assert api.get("/indices/My files/files/nope").status_code == 404
    settings = api.get("/indices/My files/settings").json()
    assert settings["name"] == "My files" and settings["config"]["chunk_size"] >= 16
    mode = settings["search_settings_schema"]["properties"]["retrieval_mode"]
    assert "hybrid" in mode["enum"]
    assert api.get("/indices/nope/settings").status_code == 404


def test_a_file_is_indexed_again_from_its_stored_copy(
    live_server: LiveServer, api: httpx.Client
) -> None:
    (canteen,) = [f for f in api.get("/indices/My files/files").json() if f["name"] == "canteen.md"]
    before = api.get(f"/indices/My files/files/{canteen['id']}/chunks").json()
    index = live_server.app.indices.get("My files")

    def updated() -> str:
        (entry,) = [s for s in index.list_sources() if s["id"] == canteen["id"]]
        return str(entry["updated_at"])

    last = updated()
    taken = api.post(f"/indices/My files/files/{canteen['id']}/reindex")
    assert taken.status_code == 202
    body = taken.json()
    assert body["index"] == "My files" and body["accepted"] == ["canteen.md"]
    assert body["job"]["kind"] == "reindex" and body["job"]["files"] == ["canteen.md"]
    deadline = time.monotonic() + 60
    while (job := api.get(f"/jobs/{body['job']['id']}").json())["status"] != "done":
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.1)
    assert [(o["file"], o["status"]) for o in job["outcomes"]] == [("canteen.md", "indexed")]
    assert job["outcomes_not_listed"] == 0
    # The list of jobs leaves the outcomes out (200 jobs of up to MAX_JOB_OUTCOMES each).
    (listed,) = [j for j in api.get("/jobs").json() if j["id"] == job["id"]]
    assert listed["outcomes"] is None and listed["files_done"] == 1
    now = api.get(f"/indices/My files/files/{canteen['id']}").json()
    chunks = api.get(f"/indices/My files/files/{canteen['id']}/chunks").json()
    assert now["status"] == "indexed" and updated() > last
    assert [c["text"] for c in chunks] == [c["text"] for c in before]
    assert api.post("/indices/My files/files/nope/reindex").status_code == 404


def test_an_upload_past_the_users_queued_jobs_is_a_429_saying_when_to_retry(
    live_server: LiveServer, api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload is refused before its body is read: it was received whole, and written
    to the data folder, to be refused after."""
    settings = live_server.app.settings
    files_before = api.get("/indices/My files/files").json()
    (canteen,) = [f for f in files_before if f["name"] == "canteen.md"]
    forms_read: list[str] = []
    form = Request.form

    def reading_form(request: Request, *args: Any, **kwargs: Any) -> Any:
        forms_read.append(request.url.path)
        return form(request, *args, **kwargs)

    monkeypatch.setattr(Request, "form", reading_form)
    limit, settings.max_jobs_per_user = settings.max_jobs_per_user, 0
    try:
        upload = api.post("/indices/My files/files", files=[("files", ("x.md", b"Extra."))])
        reindex = api.post(f"/indices/My files/files/{canteen['id']}/reindex")
    finally:
        settings.max_jobs_per_user = limit
    for refused in (upload, reindex):
        assert refused.status_code == 429, refused.text
        assert refused.headers["Retry-After"] == "10"
        error = refused.json()["error"]
        assert error["code"] == "busy" and "MAX_JOBS_PER_USER" in error["message"]
    assert forms_read == []
    assert api.get("/indices/My files/files").json() == files_before


def test_an_upload_holding_a_file_past_max_file_bytes_is_a_413_and_takes_nothing(
    live_server: LiveServer, api: httpx.Client
) -> None:
    """Refused as the file is copied out of the request; before, it was staged and its
    job failed it later ("the limit is 0 MB")."""
    settings = live_server.app.settings
    jobs_before = _job_ids(api)
    limit, settings.max_file_bytes = settings.max_file_bytes, 100_000
    try:
        files = [("files", ("small.md", b"Small.")), ("files", ("big.md", b"word " * 20_001))]
        refused = api.post("/indices/My files/files", files=files)
    finally:
        settings.max_file_bytes = limit
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"] == {
        "code": "request_too_large",
        "message": "the file 'big.md' is larger than 97.7 KB, the limit for one file "
        "(MAX_FILE_BYTES): nothing of the upload was taken",
        "type": "invalid_request_error",
        "param": "files",
    }
    _assert_nothing_taken(live_server, api, jobs_before)


def test_an_upload_naming_a_file_past_the_name_limit_is_a_422_and_takes_nothing(
    live_server: LiveServer, api: httpx.Client
) -> None:
    """Refused before it is staged: such a name was kept whole in the job's row and its
    listings (3,900-character names made a 780 kB answer), for the job to fail it."""
    jobs_before = _job_ids(api)
    files = [("files", ("fine.md", b"Fine.")), ("files", ("n" * 253 + ".md", b"Long."))]
    refused = api.post("/indices/My files/files", files=files)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == {
        "code": "invalid_request",
        "message": "file 2 of the upload is refused: the file name is 256 characters long; "
        "the limit is 255: nothing of the upload was taken",
        "type": "invalid_request_error",
        "param": "files[1]",
    }
    _assert_nothing_taken(live_server, api, jobs_before)


@pytest.mark.parametrize("where", ["reading", "copying", "staging"])
def test_an_upload_the_full_disk_refuses_is_a_507_and_takes_nothing(
    live_server: LiveServer, api: httpx.Client, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The disk fills as starlette spools the form to the temp folder (it was a 422), as
    the upload is copied out of the request (a 500), or as it is staged for its job (a
    422, a request not to send again): 507, as an upload the disk has no room for is
    refused before it is read."""
    errors = {"copying": (errno.ENOSPC, "No space left on device")}
    errors["reading"] = errors["copying"]
    errors["staging"] = (errno.EDQUOT, "Disk quota exceeded")

    def full(*args: Any) -> None:
        raise OSError(*errors[where])

    async def spooling_full(*args: Any) -> None:
        full()

    if where == "reading":
        monkeypatch.setattr(UploadFile, "write", spooling_full)
    elif where == "copying":
        monkeypatch.setattr(index_routes, "_copy_upload", full)
    else:
        monkeypatch.setattr(shutil, "move", full)
    jobs_before = _job_ids(api)
    refused = api.post("/indices/My files/files", files=[("files", ("a.md", b"Alpha."))])
    assert refused.status_code == 507, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["type"]) == ("insufficient_storage", "server_error")
    assert error["message"].endswith(errors[where][1])
    _assert_nothing_taken(live_server, api, jobs_before)  # no folder, when reading failed


def test_an_upload_name_is_measured_as_the_index_keeps_it(
    live_server: LiveServer, api: httpx.Client
) -> None:
    """Before, the raw name was measured: a macOS (NFD) Hangul name of 264 characters,
    104 kept, and one with folders were refused though the index takes them; one the
    index refuses (a character that reverses how it reads) is refused whole, as a long one is."""
    nfd = unicodedata.normalize("NFD", "한국어문서" * 20 + ".md")
    folders = "reports/2026/" * 20 + "q3.md"
    assert len(nfd) > 255 and len(folders) > 255
    files = [("files", (nfd, b"Hangul.")), ("files", (folders, b"Q3."))]
    taken = api.post("/indices/My files/files", files=files)
    assert taken.status_code == 202, taken.text
    assert taken.json()["accepted"] == [nfd, folders]  # the client's names, as before
    deadline = time.monotonic() + 60
    while (job := api.get(f"/jobs/{taken.json()['job']['id']}").json())["status"] != "done":
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.1)
    kept = {unicodedata.normalize("NFC", "한국어문서" * 20 + ".md"), "q3.md"}
    assert {o["status"] for o in job["outcomes"]} == {"indexed"}
    names = {s["name"] for s in live_server.app.indices.get("My files").list_sources()}
    assert kept <= names

    refused = api.post("/indices/My files/files", files=[("files", ("fdp.\u202emd", b"Rev."))])
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["message"] == (
        "file 1 of the upload is refused: the file name contains an invisible character "
        "that changes how it is displayed (U+202E RIGHT-TO-LEFT OVERRIDE); rename the file: "
        "nothing of the upload was taken"
    )


def test_an_index_an_import_is_filling_is_not_deleted(
    live_server: LiveServer, api: httpx.Client
) -> None:
    """Deleted under it, the import (``ragloom index import``) died halfway."""
    assert api.post("/indices", json={"name": "Imported"}).status_code == 201
    index = live_server.app.indices.get("Imported")
    assert isinstance(index, FileIndex)
    mark = WorkLock(index.locks_dir, IMPORT_LOCK)
    mark.acquire_new()  # as an import holds it while it fills the index
    try:
        refused = api.delete("/indices/Imported")
    finally:
        mark.release()  # as an import that ended lets it go
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["message"].startswith(
        "'Imported' cannot be deleted now: an import is still filling it"
    )
    assert api.delete("/indices/Imported").status_code == 204
