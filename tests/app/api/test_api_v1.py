"""The HTTP API, /api/v1, against a live server: every route, its errors, and answers as
one JSON object or as server-sent events."""

from __future__ import annotations

import errno
import json
import shutil
import time
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from ragloom_app.api import index_routes
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.worklock import WorkLock
from tests.helpers.api_server import ANSWER, LiveServer, api, live_server, sse_events

__all__ = ["api", "live_server"]


def test_health_version_and_the_openapi_document(
    live_server: LiveServer, api: httpx.Client
) -> None:
    assert api.get("/health").json() == {"status": "ok"}
    assert api.get("/version").json()["name"] == "ragloom"
    schema = httpx.get(f"{live_server.url}openapi.json").json()
    assert "/api/v1/conversations/{conversation_id}/ask" in schema["paths"]
    assert "/v1/chat/completions" in schema["paths"]
    assert not any(path.startswith("/gradio_api") for path in schema["paths"])


def test_modes_come_with_their_settings_as_json_schema(api: httpx.Client) -> None:
    modes = {m["id"]: m for m in api.get("/modes").json()}
    assert {"fullqa", "decompose", "react", "rewoo", "auto"} <= set(modes)
    top_k = modes["fullqa"]["settings_schema"]["properties"]["top_k"]
    assert top_k["type"] == "integer" and top_k["minimum"] >= 1 and "default" in top_k
    assert modes["fullqa"]["settings_schema"]["additionalProperties"] is False


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
    jobs_before = [job["id"] for job in api.get("/jobs").json()]
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
    assert [job["id"] for job in api.get("/jobs").json()] == jobs_before
    uploads = settings.data_dir / "uploads"
    assert not [p for p in uploads.iterdir() if p.name.startswith("api-upload-")]
    assert not list((settings.data_dir / "jobs").glob("*"))


def test_an_upload_naming_a_file_past_the_name_limit_is_a_422_and_takes_nothing(
    live_server: LiveServer, api: httpx.Client
) -> None:
    """Refused before it is staged: such a name was kept whole in the job's row and its
    listings (3,900-character names made a 780 kB answer), for the job to fail it."""
    jobs_before = [job["id"] for job in api.get("/jobs").json()]
    files = [("files", ("fine.md", b"Fine.")), ("files", ("n" * 253 + ".md", b"Long."))]
    refused = api.post("/indices/My files/files", files=files)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == {
        "code": "invalid_request",
        "message": "the name of file 2 of the upload is 256 characters long; the limit is "
        "255: nothing of the upload was taken",
        "type": "invalid_request_error",
        "param": "files[1]",
    }
    assert [job["id"] for job in api.get("/jobs").json()] == jobs_before
    settings = live_server.app.settings
    assert not list((settings.data_dir / "uploads").glob("api-upload-*"))
    assert not list((settings.data_dir / "jobs").glob("*"))


@pytest.mark.parametrize("where", ["copying", "staging"])
def test_an_upload_the_full_disk_refuses_is_a_507_and_takes_nothing(
    live_server: LiveServer, api: httpx.Client, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The disk fills as the upload is copied out of the request (it was a 500), or as
    it is staged for its job (a 422, a request not to send again): 507, as an upload the
    disk has no room for is refused before it is read."""
    errors = {"copying": (errno.ENOSPC, "No space left on device")}
    errors["staging"] = (errno.EDQUOT, "Disk quota exceeded")

    def full(*args: Any) -> None:
        raise OSError(*errors[where])

    if where == "copying":
        monkeypatch.setattr(index_routes, "_copy_upload", full)
    else:
        monkeypatch.setattr(shutil, "move", full)
    jobs_before = [job["id"] for job in api.get("/jobs").json()]
    refused = api.post("/indices/My files/files", files=[("files", ("a.md", b"Alpha."))])
    assert refused.status_code == 507, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["type"]) == ("insufficient_storage", "server_error")
    assert error["message"].endswith(errors[where][1])
    assert [job["id"] for job in api.get("/jobs").json()] == jobs_before
    settings = live_server.app.settings
    uploads = settings.data_dir / "uploads"
    assert not [p for p in uploads.iterdir() if p.name.startswith("api-upload-")]
    assert not list((settings.data_dir / "jobs").glob("*"))


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


def test_a_conversation_is_created_renamed_listed_and_deleted(api: httpx.Client) -> None:
    created = api.post("/conversations", json={"title": "Reactor"})
    assert created.status_code == 201
    cid = created.json()["id"]
    assert (
        api.patch(f"/conversations/{cid}", json={"title": "Zorblax"}).json()["title"] == "Zorblax"
    )
    assert cid in [c["id"] for c in api.get("/conversations").json()]
    assert api.get(f"/conversations/{cid}").json()["messages"] == []
    assert api.delete(f"/conversations/{cid}").status_code == 204
    assert api.get(f"/conversations/{cid}").status_code == 404
    assert api.delete(f"/conversations/{cid}").status_code == 404


def test_conversations_are_listed_a_page_at_a_time(api: httpx.Client) -> None:
    made = [api.post("/conversations", json={"title": f"Page {n}"}).json()["id"] for n in range(3)]
    newest = [c["id"] for c in api.get("/conversations", params={"limit": 2}).json()]
    assert newest == made[::-1][:2]
    after = api.get("/conversations", params={"limit": 2, "offset": 1}).json()
    assert [c["id"] for c in after] == made[::-1][1:3]
    for bad in ({"limit": 0}, {"limit": 501}, {"offset": -1}):
        refused = api.get("/conversations", params=bad)
        assert refused.status_code == 422 and refused.json()["error"]["param"] in bad, bad
    for cid in made:
        api.delete(f"/conversations/{cid}")


def test_ask_answers_as_ask_json_does_and_saves_both_turns(api: httpx.Client) -> None:
    cid = api.post("/conversations").json()["id"]
    answer = api.post(f"/conversations/{cid}/ask", json={"question": "How hot is the reactor?"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["answer"] == ANSWER and body["mode"] == "fullqa"
    assert body["citations"][0]["source"] == "reactor.md"
    assert body["grounding"]["status"] == "supported"
    assert body["usage"]["llm_calls"] == 1
    messages = api.get(f"/conversations/{cid}").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "How hot is the reactor?"),
        ("assistant", ANSWER),
    ]
    assert messages[1]["citations"][0]["source"] == "reactor.md"


def test_ask_streams_the_typed_events_and_ends_with_the_whole_answer(api: httpx.Client) -> None:
    cid = api.post("/conversations").json()["id"]
    with api.stream(
        "POST", f"/conversations/{cid}/ask", json={"question": "How hot?", "stream": True}
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.read().decode())
    names = [name for name, _ in events]
    assert names[-1] == "done" and "answer_delta" in names and "citations" in names
    assert "grounding" in names and "usage" in names and "step" in names
    streamed = "".join(d["text"] for n, d in events if n == "answer_delta")
    assert streamed == ANSWER == events[-1][1]["answer"]
    assert events[-1][1]["conversation_id"] == cid


def test_an_ask_may_change_how_an_index_searches(api: httpx.Client) -> None:
    cid = api.post("/conversations").json()["id"]
    question = "How hot is the reactor?"

    def found_by(body: dict[str, Any]) -> set[str]:
        (search,) = [s for s in body["steps"] if s["step"] == "retrieve" and "output" in s]
        return {way for hit in search["output"] for way in hit.get("found_by") or {}}

    both = api.post(f"/conversations/{cid}/ask", json={"question": question}).json()
    vector = {"My files": {"retrieval_mode": "vector"}}
    alone = api.post(
        f"/conversations/{cid}/ask", json={"question": question, "index_settings": vector}
    )
    assert alone.status_code == 200, alone.text
    assert found_by(both) == {"vector", "fulltext"} and found_by(alone.json()) == {"vector"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"question": "Hot?", "mode": "telepathy"}, "unknown mode 'telepathy'"),
        (
            {"question": "Hot?", "index_settings": {"My files": {"retrieval_mode": "telepathy"}}},
            "retrieval_mode must be one of",
        ),
        (
            {"question": "Hot?", "index_settings": {"My files": {"frobnicate": 1}}},
            "frobnicate",
        ),
        ({"question": "Hot?", "settings": {"top_k": 0}}, "top_k must be between"),
        ({"question": "Hot?", "settings": {"frobnicate": 1}}, "no such setting: frobnicate"),
        ({"question": "x" * 5000}, "the limit is 4,000"),
    ],
)
def test_what_the_app_refuses_is_a_422_in_its_words_and_saves_nothing(
    api: httpx.Client, body: dict[str, Any], message: str
) -> None:
    cid = api.post("/conversations").json()["id"]
    refused = api.post(f"/conversations/{cid}/ask", json=body)
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "invalid_request"
    assert message in refused.json()["error"]["message"]
    assert api.get(f"/conversations/{cid}").json()["messages"] == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/conversations/0123abc/ask", {"question": "Hot?"}),
        ("GET", "/conversations/..%2F..%2Fetc%2Fpasswd", None),
        ("GET", "/no/such/route", None),
        ("POST", "/conversations/{cid}/ask", {"question": "Hot?", "indices": ["nope"]}),
        ("POST", "/conversations/{cid}/ask", {"question": "Hot?", "index_settings": {"nope": {}}}),
    ],
)
def test_unknown_ids_and_paths_are_json_404s(
    api: httpx.Client, method: str, path: str, body: Any
) -> None:
    cid = api.post("/conversations").json()["id"]
    response = api.request(method, path.replace("{cid}", cid), json=body)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"question": ""},
        {"question": 7},
        {"question": "Hot?", "colour": "red"},
        {"question": "Hot?", "settings": [1, 2]},
    ],
)
def test_a_body_the_api_cannot_take_is_a_422_naming_where(api: httpx.Client, body: Any) -> None:
    cid = api.post("/conversations").json()["id"]
    refused = api.post(f"/conversations/{cid}/ask", json=body)
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "invalid_request" and error["details"][0]["loc"][0] == "body"


def test_a_body_that_is_not_json_is_refused(api: httpx.Client) -> None:
    cid = api.post("/conversations").json()["id"]
    # A form a page on another site could post: not read as the question.
    refused = api.post(
        f"/conversations/{cid}/ask",
        content=b'{"question": "Hot?"}',
        headers={"content-type": "text/plain"},
    )
    assert refused.status_code == 422
    assert api.get(f"/conversations/{cid}").json()["messages"] == []


def test_the_interactive_docs_load_nothing_remote(live_server: LiveServer) -> None:
    page = httpx.get(f"{live_server.url}docs", timeout=30)
    assert page.status_code == 200 and "/openapi.json" in page.text
    assert "cdn." not in page.text and "https://" not in page.text.split("<body>")[1]
    # The page's inline start-up script is allowed by its hash, nothing else inline.
    assert "'sha256-" in page.headers["content-security-policy"]
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert httpx.get(f"{live_server.url}docs-assets/{asset}", timeout=30).status_code == 200
    assert httpx.get(f"{live_server.url}docs-assets/index.html", timeout=30).status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"question": "   "}, "the question is empty"),
        ({"question": "Hot?", "settings": {"top_k": int("9" * 400)}}, "top_k must be a number"),
    ],
)
def test_inputs_that_once_made_500s_are_422s_in_words(
    api: httpx.Client, body: dict[str, Any], message: str
) -> None:
    cid = api.post("/conversations").json()["id"]
    refused = api.post(f"/conversations/{cid}/ask", json=body)
    assert refused.status_code == 422 and message in refused.json()["error"]["message"]


def _json_in(encoding: str, value: object) -> dict[str, Any]:
    """Request arguments sending ``value`` as JSON in ``encoding``."""
    body = json.dumps(value).encode(encoding)
    return {"content": body, "headers": {"Content-Type": "application/json"}}


def test_json_nested_past_pythons_stack_on_a_route_without_a_body_is_not_a_500(
    api: httpx.Client,
) -> None:
    nested = "[" * 3000 + '"\\u0000"' + "]" * 3000
    sent = api.post("/logout", content=nested, headers={"Content-Type": "application/json"})
    assert sent.status_code < 500, sent.text


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "where"),
    [
        # PostgreSQL's text cannot hold U+0000: a login name holding one was a 500 there.
        ("POST", "/login", {"json": {"name": "ad\x00min", "password": "x"}}, "body"),
        ("POST", "/conversations", {"json": {"title": "notes\x00"}}, "body"),
        ("GET", "/conversations/abc%00def", {}, "path"),
        ("GET", "/jobs", {"params": {"all": "\x00"}}, "query"),
        # JSON may come as UTF-16 or -32, which the route's parser reads as well.
        ("POST", "/login", _json_in("utf-16-le", {"name": "ad\x00min", "password": "x"}), "body"),
        ("POST", "/login", _json_in("utf-32-be", {"name": "ad\x00min", "password": "x"}), "body"),
    ],
)
def test_text_holding_nul_is_refused_the_same_on_every_database(
    api: httpx.Client, method: str, path: str, kwargs: dict[str, Any], where: str
) -> None:
    before = api.get("/conversations").json()
    refused = api.request(method, path, **kwargs)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_request"
    assert f"the request's {where} holds the NUL character" in error["message"]
    assert api.get("/conversations").json() == before  # nothing was made


def test_a_key_that_is_no_longer_valid_is_refused_even_without_login(api: httpx.Client) -> None:
    # Dropping it silently would let a revoked key act as the local user.
    refused = api.get("/me", headers={"Authorization": "Bearer rlk_revoked-or-made-up"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    # A key that is no key of Ragloom's (an OpenAI client's placeholder) names nobody.
    assert api.get("/me", headers={"Authorization": "Bearer sk-local"}).json()["name"] == "local"


def test_a_multipart_body_to_a_route_that_takes_no_upload_is_held_to_the_body_limit(
    live_server: LiveServer,
) -> None:
    big = b"x" * (5 * 1024 * 1024)
    refused = httpx.post(f"{live_server.url}api/v1/login", files={"f": ("a.bin", big)}, timeout=60)
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "request_too_large"


def test_a_request_to_another_host_is_refused_in_json_on_api_paths(
    live_server: LiveServer,
) -> None:
    # DNS rebinding: a page served as evil.example reaching the loopback API.
    refused = httpx.get(
        f"{live_server.url}api/v1/conversations", headers={"Host": "evil.example"}, timeout=30
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "bad_request"
    assert "evil.example" in refused.json()["error"]["message"]
