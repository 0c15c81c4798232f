"""Two ``ragloom serve`` processes behind Debian's haproxy on loopback, sharing a throwaway
PostgreSQL (rows and full text) and a ``chroma run`` (vectors), each with its own data
folder: an API client sent to either in turn uploads, asks and reads as against one app."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_server import ANSWER, DOCUMENTS
from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.cli import PROJECT
from tests.helpers.haproxy import SERVED_BY, haproxy_bin, haproxy_in_front
from tests.helpers.postgres import PostgresServer, fresh_database

pytestmark = pytest.mark.postgres

SETTINGS = f"""
LLMS = {{"replay": {{"class": "ragloom.llms.replay.ReplayLLM", "replies": [{ANSWER!r}]}}}}
DEFAULT_LLM = "replay"
EMBEDDINGS = {{"hash": {{"class": "ragloom_app.testing.HashEmbeddings"}}}}
DEFAULT_EMBEDDING = "hash"
FIRST_RUN_DOCS = None
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while True:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer within 180 s"
        time.sleep(0.2)


@pytest.fixture
def balanced(postgres_server: PostgresServer, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """The balancer's URL and the two apps' own URLs."""
    if haproxy_bin() is None:
        pytest.skip("haproxy is not installed (scripts/ensure-haproxy)")
    settings = tmp_path / "settings.py"
    settings.write_text(SETTINGS, encoding="utf-8")
    database = fresh_database(postgres_server)
    with chroma_server() as chroma:
        processes, urls = _start_apps(tmp_path, settings, database, chroma)
        try:
            ports = [int(url.rsplit(":", 1)[1]) for url in urls]
            with haproxy_in_front(ports) as port:
                yield f"http://127.0.0.1:{port}", urls
        finally:
            for process in processes:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _start_apps(
    folder: Path, settings: Path, database: str, chroma: ChromaServer
) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    processes, urls = [], []
    for n in range(2):
        port, log = _free_port(), folder / f"app{n}.log"
        env = {
            **inherited,
            "PYTHONPATH": os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]),
            "RAGLOOM_SETTINGS": str(settings),
            "RAGLOOM_DATA_DIR": str(folder / f"data{n}"),
            "RAGLOOM_DATABASE_URL": database,
            "RAGLOOM_CHROMA_SERVER": chroma.url,
        }
        command = [sys.executable, "-m", "ragloom_app.cli", "serve", "--port", str(port)]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=folder
            )
        processes.append(process)
        urls.append(f"http://127.0.0.1:{port}")
        # One after the other: the second finds the first's schema and default index.
        _wait_healthy(urls[-1], process, log)
    return processes, urls


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
    deadline = time.monotonic() + 120
    while True:
        (listed,) = call("GET", "/indices/My files/files").json()
        if listed["status"] == "indexed":
            break
        assert listed["status"] != "failed", listed
        assert time.monotonic() < deadline, listed
        time.sleep(0.2)
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
