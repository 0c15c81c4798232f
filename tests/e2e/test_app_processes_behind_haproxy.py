"""Two ``ragloom serve`` processes behind Debian's haproxy on loopback, sharing a throwaway
PostgreSQL (rows and full text) and a ``chroma run`` (vectors), each with its own data
folder: an API client sent to either in turn uploads, asks and reads as against one app."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_jobs import finished_job
from tests.helpers.api_server import ANSWER, DOCUMENTS
from tests.helpers.chroma_server import chroma_server
from tests.helpers.haproxy import SERVED_BY, haproxy_bin, haproxy_in_front
from tests.helpers.postgres import PostgresServer, fresh_database
from tests.helpers.serve_process import serve_process

pytestmark = pytest.mark.postgres

SETTINGS = f"""
LLMS = {{"replay": {{"class": "ragloom.llms.replay.ReplayLLM", "replies": [{ANSWER!r}]}}}}
DEFAULT_LLM = "replay"
EMBEDDINGS = {{"hash": {{"class": "ragloom_app.testing.HashEmbeddings"}}}}
DEFAULT_EMBEDDING = "hash"
FIRST_RUN_DOCS = None
"""


@pytest.fixture
def balanced(postgres_server: PostgresServer, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """The balancer's URL and the two apps' own URLs."""
    if haproxy_bin() is None:
        pytest.skip("haproxy is not installed (scripts/ensure-haproxy)")
    settings = tmp_path / "settings.py"
    settings.write_text(SETTINGS, encoding="utf-8")
    database = fresh_database(postgres_server)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    with chroma_server() as chroma, ExitStack() as apps:
        urls = []
        for n in range(2):
            env = {
                **inherited,
                "RAGLOOM_SETTINGS": str(settings),
                "RAGLOOM_DATA_DIR": str(tmp_path / f"data{n}"),
                "RAGLOOM_DATABASE_URL": database,
                "RAGLOOM_CHROMA_SERVER": chroma.url,
            }
            # One after the other: the second finds the first's schema and default index.
            served = serve_process(env, tmp_path / f"app{n}.log", cwd=tmp_path)
            url, _ = apps.enter_context(served)
            urls.append(url)
        ports = [int(url.rsplit(":", 1)[1]) for url in urls]
        with haproxy_in_front(ports) as port:
            yield f"http://127.0.0.1:{port}", urls


def test_an_api_client_sent_to_either_process_sees_one_app(
    balanced: tuple[str, list[str]],
) -> None:
    front, apps = balanced
    api = f"{front}/api/v1"
    served: list[str] = []

    def call(method: str, path: str, **kwargs: object) -> httpx.Response:
        # A new connection and no cookie each time: haproxy's round robin picks the app.
        response = httpx.request(method, f"{api}{path}", timeout=120, **kwargs)  # type: ignore[arg-type]
        served.append(response.headers[SERVED_BY])
        return response

    uploaded = call(
        "POST",
        "/indices/My files/files",
        files=[("files", ("reactor.md", DOCUMENTS["reactor.md"].encode()))],
    )
    assert uploaded.status_code == 202, uploaded.text
    job = finished_job(lambda path: call("GET", path), uploaded.json()["job"]["id"])
    assert [(o["file"], o["status"]) for o in job["outcomes"]] == [("reactor.md", "indexed")], job
    (listed,) = call("GET", "/indices/My files/files").json()
    assert listed["status"] == "indexed", listed
    for app in apps:  # each process's own view of the file
        (own,) = httpx.get(f"{app}/api/v1/indices/My files/files", timeout=30).json()
        assert own["status"] == "indexed" and own["chunks"] == listed["chunks"] >= 1

    conversation = call("POST", "/conversations").json()["id"]
    asked_on = []
    for question in ("How hot is the reactor?", "And when was it commissioned?"):
        answer = call("POST", f"/conversations/{conversation}/ask", json={"question": question})
        assert answer.status_code == 200, answer.text
        asked_on.append(served[-1])
        assert answer.json()["citations"][0]["source"] == "reactor.md"
    if asked_on[0] == asked_on[1]:  # round robin met an odd count: once more, on the other
        answer = call("POST", f"/conversations/{conversation}/ask", json={"question": "Why?"})
        asked_on.append(served[-1])
    assert set(asked_on) == {"app0", "app1"}  # the conversation went on on the other process
    messages = call("GET", f"/conversations/{conversation}").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * len(asked_on)
    assert set(served) == {"app0", "app1"}
