"""Accounts through the API, with login required: two users see nothing of each other's
conversations, files, chunks or private indices; guessing ids answers 404; a shared
index is read by both and written by its owner only. Real SQLite, Chroma and BM25."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest

from ragloom_app.app import BaseApp
from tests.helpers.api_server import replay_app, served

FILE_INDEX = "ragloom_app.index.file.FileIndex"
PASSWORD = "correct horse battery"
# The replay model answers every question alike; what differs is what it was shown.
ANSWER = "It is in the passages [1]."


@dataclass
class TwoUsers:
    url: str
    app: BaseApp
    alice_key: str
    bob_key: str


def _index(app: BaseApp, name: str, owner: str, shared: bool, folder: Path, text: str) -> None:
    index = app.indices.create(name, FILE_INDEX, owner=owner, shared=shared)
    path = folder / f"{name.replace(' ', '-')}.md"
    path.write_text(text, encoding="utf-8")
    outcomes = index.get_indexing_pipeline({}).run([path])
    assert all(o.status == "indexed" for o in outcomes), outcomes


@pytest.fixture(scope="module")
def two_users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoUsers]:
    folder = tmp_path_factory.mktemp("isolation")
    app = replay_app(folder, ANSWER, indices=[], require_login=True)
    alice = app.accounts.add_user("alice", PASSWORD, is_admin=False)
    bob = app.accounts.add_user("bob", PASSWORD)
    _index(app, "alice private", alice.id, False, folder, "Alice's secret: the vault code is 7319.")
    _index(app, "team", alice.id, True, folder, "The team handbook: standups are at nine.")
    _index(app, "bob private", bob.id, False, folder, "Bob's diary: the boat is named Osprey.")
    _, alice_key = app.accounts.create_key(alice, "tests")
    _, bob_key = app.accounts.create_key(bob, "tests")
    with served(app) as url:
        yield TwoUsers(url, app, alice_key, bob_key)


def _client(users: TwoUsers, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=f"{users.url}api/v1", headers=headers, timeout=30)


def test_without_a_key_or_a_login_every_route_is_refused(two_users: TwoUsers) -> None:
    anonymous = _client(two_users, None)
    for path in ("/conversations", "/indices", "/me", "/modes"):
        refused = anonymous.get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"]["code"] == "unauthorized"
    assert _client(two_users, "rlk_not-a-key").get("/me").status_code == 401
    assert anonymous.get("/health").status_code == 200  # a load balancer's probe


_NOT_FOUND = {"type": "not_found_error", "param": None}


def test_each_user_sees_its_own_and_the_shared_indices_only(two_users: TwoUsers) -> None:
    alice, bob = _client(two_users, two_users.alice_key), _client(two_users, two_users.bob_key)
    assert {i["name"] for i in alice.get("/indices").json()} == {"alice private", "team"}
    assert {i["name"] for i in bob.get("/indices").json()} == {"bob private", "team"}
    team = next(i for i in bob.get("/indices").json() if i["name"] == "team")
    assert (team["owner"], team["shared"]) == ("alice", True)
    assert bob.get("/indices/alice private").status_code == 404
    assert bob.get("/indices/alice private/files").status_code == 404
    assert bob.get("/indices/no such index").json() == alice.get("/indices/nope").json() | {
        "error": {"code": "not_found", "message": "no index 'no such index'", **_NOT_FOUND}
    }


def test_a_question_searches_only_what_its_user_may_read(two_users: TwoUsers) -> None:
    bob = _client(two_users, two_users.bob_key)
    cid = bob.post("/conversations").json()["id"]
    answer = bob.post(f"/conversations/{cid}/ask", json={"question": "What is the vault code?"})
    sources = {c["source"] for c in answer.json()["citations"]}
    assert "alice-private.md" not in sources
    texts = " ".join(c["text"] for c in answer.json()["citations"])
    assert "7319" not in texts and "vault" not in texts
    # Asking for the index by name is as if it did not exist.
    refused = bob.post(
        f"/conversations/{cid}/ask",
        json={"question": "What is the vault code?", "indices": ["alice private"]},
    )
    assert refused.status_code == 404
    # Nor does it reach the model: every prompt the replay model saw of bob's is checked.
    llm = two_users.app.llm("replay")
    assert not any("7319" in m.content for prompt in llm.prompts for m in prompt)


def test_conversations_are_their_owners_alone_and_guessing_ids_answers_404(
    two_users: TwoUsers,
) -> None:
    alice, bob = _client(two_users, two_users.alice_key), _client(two_users, two_users.bob_key)
    cid = alice.post("/conversations", json={"title": "Vault"}).json()["id"]
    alice.post(f"/conversations/{cid}/ask", json={"question": "What is the vault code?"})
    assert cid not in [c["id"] for c in bob.get("/conversations").json()]
    for method, path, body in [
        ("GET", f"/conversations/{cid}", None),
        ("PATCH", f"/conversations/{cid}", {"title": "mine now"}),
        ("POST", f"/conversations/{cid}/ask", {"question": "And now?"}),
        ("DELETE", f"/conversations/{cid}", None),
    ]:
        response = bob.request(method, path, json=body)
        assert response.status_code == 404, (method, path)
        assert response.json() == {
            "error": {"code": "not_found", "message": f"no conversation '{cid}'", **_NOT_FOUND}
        }
    # Alice's conversation is untouched, both turns in it.
    kept = alice.get(f"/conversations/{cid}").json()
    assert kept["title"] == "Vault" and len(kept["messages"]) == 2


def test_the_openai_endpoint_answers_each_user_over_its_own_indices(two_users: TwoUsers) -> None:
    bob = openai.OpenAI(base_url=f"{two_users.url}v1", api_key=two_users.bob_key, max_retries=0)
    completion = bob.chat.completions.create(
        model="ragloom-fullqa", messages=[{"role": "user", "content": "What is the vault code?"}]
    )
    sources = {c["source"] for c in completion.model_extra["ragloom"]["citations"]}  # type: ignore[index]
    assert "alice-private.md" not in sources
    assert bob.models.retrieve("ragloom-fullqa").id == "ragloom-fullqa"
    nobody = openai.OpenAI(base_url=f"{two_users.url}v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        nobody.models.list()
    with pytest.raises(openai.AuthenticationError):
        nobody.models.retrieve("ragloom-fullqa")


def test_a_login_sets_an_httponly_strict_cookie_and_logout_ends_it(two_users: TwoUsers) -> None:
    browser = httpx.Client(base_url=f"{two_users.url}api/v1", timeout=30)
    refused = browser.post("/login", json={"name": "alice", "password": "wrong password"})
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "the name or the password is not right"
    logged_in = browser.post("/login", json={"name": "alice", "password": PASSWORD})
    assert logged_in.status_code == 200 and logged_in.json() == {"name": "alice", "is_admin": False}
    cookie = logged_in.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "max-age=43200" in cookie
    assert browser.get("/me").json()["name"] == "alice"
    assert browser.post("/logout").status_code == 204
    browser.cookies.clear()  # as the browser does with the expired cookie
    assert browser.get("/me").status_code == 401


def test_api_keys_are_made_listed_and_revoked_by_their_owner(two_users: TwoUsers) -> None:
    alice = _client(two_users, two_users.alice_key)
    # A key makes no key: one that leaked and was revoked must leave none behind.
    refused = alice.post("/keys", json={"name": "ci"})
    assert refused.status_code == 403
    assert refused.json()["error"]["message"].startswith("an API key cannot make API keys")
    browser = httpx.Client(base_url=f"{two_users.url}api/v1", timeout=30)
    assert browser.post("/login", json={"name": "alice", "password": PASSWORD}).is_success
    created = browser.post("/keys", json={"name": "ci"})
    assert created.status_code == 201
    key = created.json()["key"]
    assert _client(two_users, key).get("/me").json()["name"] == "alice"
    listed = alice.get("/keys").json()
    assert "key" not in listed[0] and created.json()["id"] in [k["id"] for k in listed]
    bob = _client(two_users, two_users.bob_key)
    assert bob.delete(f"/keys/{created.json()['id']}").status_code == 404
    assert alice.delete(f"/keys/{created.json()['id']}").status_code == 204
    assert _client(two_users, key).get("/me").status_code == 401


def _wait_indexed(client: httpx.Client, index: str, names: set[str]) -> list[dict]:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        files = client.get(f"/indices/{index}/files").json()
        done = {f["name"]: f for f in files if f["status"] in ("indexed", "failed")}
        if names <= set(done):
            return [done[n] for n in sorted(names)]
        time.sleep(0.2)
    raise AssertionError(f"not indexed in time: {files}")


def test_a_private_index_is_created_filled_and_read_by_its_owner_alone(
    two_users: TwoUsers,
) -> None:
    alice, bob = _client(two_users, two_users.alice_key), _client(two_users, two_users.bob_key)
    created = alice.post("/indices", json={"name": "alice notes"})
    assert created.status_code == 201 and created.json()["shared"] is False
    upload = alice.post(
        "/indices/alice notes/files",
        files=[
            ("files", ("pumps.md", b"The coolant pumps run at 300 rpm.", "text/markdown")),
            ("files", ("../../evil name.md", b"Escaping is futile.", "text/markdown")),
        ],
    )
    assert upload.status_code == 202, upload.text
    files = _wait_indexed(alice, "alice notes", {"pumps.md", "evil name.md"})
    assert [f["status"] for f in files] == ["indexed", "indexed"]
    pumps = next(f for f in files if f["name"] == "pumps.md")
    chunks = alice.get(f"/indices/alice notes/files/{pumps['id']}/chunks").json()
    assert chunks[0]["text"] == "The coolant pumps run at 300 rpm."
    # Bob: not even there.
    assert bob.get(f"/indices/alice notes/files/{pumps['id']}/chunks").status_code == 404
    assert bob.get(f"/indices/alice notes/files/{pumps['id']}").status_code == 404
    assert bob.post(f"/indices/alice notes/files/{pumps['id']}/reindex").status_code == 404
    assert bob.get("/indices/alice notes/settings").status_code == 404
    assert (
        bob.post("/indices/alice notes/files", files=[("files", ("x.md", b"x"))]).status_code == 404
    )
    assert bob.delete("/indices/alice notes").status_code == 404
    assert alice.delete(f"/indices/alice notes/files/{pumps['id']}").status_code == 204
    assert alice.delete("/indices/alice notes").status_code == 204


def test_a_shared_index_is_read_by_all_and_written_by_its_owner_only(two_users: TwoUsers) -> None:
    alice, bob = _client(two_users, two_users.alice_key), _client(two_users, two_users.bob_key)
    files = bob.get("/indices/team/files").json()
    assert [f["name"] for f in files] == ["team.md"]
    chunks = bob.get(f"/indices/team/files/{files[0]['id']}/chunks").json()
    assert "standups are at nine" in chunks[0]["text"]
    refused = bob.post("/indices/team/files", files=[("files", ("x.md", b"Bob was here."))])
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert bob.delete(f"/indices/team/files/{files[0]['id']}").status_code == 403
    assert bob.post(f"/indices/team/files/{files[0]['id']}/reindex").status_code == 403
    assert bob.delete("/indices/team").status_code == 403
    assert alice.get("/indices/team/files").json() == files  # untouched


def test_a_user_deletes_its_own_index_and_no_other_whatever_the_names(
    two_users: TwoUsers,
) -> None:
    alice, bob = _client(two_users, two_users.alice_key), _client(two_users, two_users.bob_key)
    # A name that is a number would read as another index's id: refused.
    assert alice.post("/indices", json={"name": "4"}).status_code == 422
    assert alice.post("/indices", json={"name": "a/b"}).status_code == 422
    assert alice.post("/indices", json={"name": "scratch"}).status_code == 201
    assert alice.delete("/indices/scratch").status_code == 204
    assert {i["name"] for i in bob.get("/indices").json()} == {"bob private", "team"}
    # The taken name is told alike whoever owns it: nothing of bob's index shows.
    taken = alice.post("/indices", json={"name": "bob private"})
    assert taken.status_code == 409
    assert taken.json()["error"]["message"] == "the name 'bob private' is taken"


def test_only_an_admin_makes_a_shared_index(two_users: TwoUsers) -> None:
    bob = _client(two_users, two_users.bob_key)
    refused = bob.post("/indices", json={"name": "planted", "shared": True})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"


def test_parallel_wrong_passwords_cannot_pass_the_limit_together(two_users: TwoUsers) -> None:
    from concurrent.futures import ThreadPoolExecutor

    two_users.app.accounts.add_user("carol", PASSWORD)

    def attempt(n: int) -> int:
        body = {"name": "carol", "password": f"wrong guess {n}"}
        return httpx.post(f"{two_users.url}api/v1/login", json=body, timeout=60).status_code

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(attempt, range(16)))
    # Each attempt counts before its password is checked, and two are checked at once: at
    # most 5 are ever checked (401), a couple more may race the count; the rest are told
    # to wait (429: the limit, or too many at once).
    checked = statuses.count(401)
    assert checked <= 7 and checked + statuses.count(429) == 16, statuses
    right = httpx.post(
        f"{two_users.url}api/v1/login", json={"name": "carol", "password": PASSWORD}, timeout=60
    )
    # Past the limit the right password waits too; short of it, it logs in.
    assert right.status_code == (429 if checked >= 5 else 200), (checked, right.text)
