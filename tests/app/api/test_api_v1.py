"""The HTTP API, /api/v1, against a live server: its routes (the indices' in
test_api_indices.py), its errors, and answers as one JSON object or as server-sent events."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

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
