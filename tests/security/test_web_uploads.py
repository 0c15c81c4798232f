"""Uploads and the data folder against a live server: sizes, counts, totals, copies, rights.

The server is tests.helpers.web_surface's (small limits, a slow replay LLM, hash
embeddings). Every refusal is checked for its status, its words, and that the server went
on serving meanwhile.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.heartbeat import Heartbeat
from tests.helpers.web_surface import (
    KB,
    MAX_FILE,
    MAX_FILES,
    Surface,
    index_upload,
    raw_request,
    served,
)

pytestmark = pytest.mark.security


# -- uploads ------------------------------------------------------------------------------
def test_a_file_over_the_limit_is_refused_while_it_streams_in(surface: Surface) -> None:
    before = surface.uploads()
    body = b"x" * (32 * MAX_FILE)  # 8 MB for a 256 KB limit
    with Heartbeat() as beat:
        start = time.perf_counter()
        answer = httpx.post(
            f"{surface.url}gradio_api/upload", files={"files": ("big.txt", body)}, timeout=30
        )
        refused_after = time.perf_counter() - start
    assert answer.status_code == 413
    assert f"maximum allowed size of {MAX_FILE} bytes" in answer.text
    assert surface.uploads() == before, "the refused upload left a file in the upload cache"
    assert refused_after < 5
    assert beat.longest_pause < 0.5
    assert served(surface) < 2


def test_an_upload_over_its_total_is_refused_before_it_is_read(surface: Surface) -> None:
    huge = 10 * KB**3  # declared, never sent: the refusal comes before any byte is read
    request = (
        b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\n"
        + f"Content-Length: {huge}\r\nConnection: close\r\n\r\n".encode()
    )
    start = time.perf_counter()
    status, text = raw_request(surface, request)
    assert status == 413
    assert "at most 64 MB (MAX_UPLOAD_REQUEST_BYTES)" in text
    assert time.perf_counter() - start < 2
    chunked = (
        b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
    )
    assert raw_request(surface, chunked) == (
        411,
        "Refused: an upload must state its size (a Content-Length header).",
    )
    assert served(surface) < 2


def test_too_many_files_are_refused_whole(surface: Surface, tmp_path: Path) -> None:
    from gradio_client.exceptions import AppError

    files = []
    for number in range(MAX_FILES + 1):
        files.append(tmp_path / f"many-{number}.md")
        files[-1].write_text(f"# Note {number}\n\nA note numbered {number}.\n")
    with pytest.raises(AppError, match=r"Too many files in one upload: 4\. The limit is 3 files"):
        index_upload(surface, files)
    names = {s["name"] for s in surface.app.indices.get("My files").list_sources()}
    assert not names & {f.name for f in files}
    assert all(f.exists() for f in files), "the user's own files must stay"
    # Their copies wait for "Index" to be pressed again with fewer files (or for gradio's
    # daily clean-up); removed here so that the next tests start with an empty cache.
    kept = surface.uploads()
    assert {path.name for path in kept} == {f.name for f in files}
    for path in kept:
        path.unlink()


def test_the_upload_copy_is_deleted_once_indexed(surface: Surface, tmp_path: Path) -> None:
    doc = tmp_path / "reactor.md"
    doc.write_text("# Reactor\n\nThe reactor runs at 451 kelvin.\n")
    results, _, _ = index_upload(surface, [doc])
    assert "1 indexed" in results
    assert surface.uploads() == []
    assert doc.exists()
    stored = surface.app.indices.get("My files").list_sources()
    assert "reactor.md" in {s["name"] for s in stored}


def test_a_file_of_this_machine_named_in_a_request_is_not_taken(
    surface: Surface, tmp_path: Path
) -> None:
    secret = tmp_path / "secret-notes.md"
    secret.write_text("# Secret\n\nThe vault code is 7391.\n")
    # Not uploaded: a path of the server's own disk, as a crafted API call names it.
    file_data = {
        "path": str(secret),
        "orig_name": secret.name,
        "meta": {"_type": "gradio.FileData"},
    }
    route = f"{surface.url}gradio_api/call/index_files"
    started = httpx.post(route, json={"data": ["My files", [file_data]]}, timeout=10)
    assert started.status_code == 200
    events = httpx.get(f"{route}/{started.json()['event_id']}", timeout=30).text
    assert "event: error" in events and "event: complete" not in events
    names = {s["name"] for s in surface.app.indices.get("My files").list_sources()}
    assert secret.name not in names
    assert surface.uploads() == [], "gradio copied the file into its cache"
    assert secret.exists()


def test_the_data_folder_and_everything_in_it_is_owner_only(
    surface: Surface, tmp_path: Path
) -> None:
    doc = tmp_path / "private.md"
    doc.write_text("# Private\n\nOnly the owner may read this.\n")
    index_upload(surface, [doc])  # stored file, SQLite, Chroma, full-text index
    paths = [surface.data_dir, *surface.data_dir.rglob("*")]
    assert len(paths) > 10
    loose = [f"{p} {stat.S_IMODE(p.lstat().st_mode):o}" for p in paths if p.lstat().st_mode & 0o077]
    assert loose == []
    assert stat.S_IMODE(surface.data_dir.stat().st_mode) == 0o700


def test_an_existing_open_data_folder_is_tightened(tmp_path: Path) -> None:
    from ragloom_app.data_folder import make_private_folder

    folder = tmp_path / "appdata"
    folder.mkdir()
    folder.chmod(0o755)
    make_private_folder(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_data_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    from ragloom_app.data_folder import make_private_folder
    from ragloom_app.settings import SettingsError

    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    if os.getuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    os.chown(folder, 65534, 65534)  # nobody
    with pytest.raises(SettingsError, match="belongs to another user"):
        make_private_folder(folder)
