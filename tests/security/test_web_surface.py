"""The web surface against a live server: headers, relays, hosts, origins, serve, the queue.

The server is tests.helpers.web_surface's (small limits, a slow replay LLM, hash
embeddings); uploads and the data folder are in test_web_uploads.py. Every refusal is
checked for its status, its words, and that the server went on serving meanwhile.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.settings import AppSettings
from ragloom_app.web.hosts import UnsafeHostError
from tests.e2e.conftest import browser_type_launch_args  # noqa: F401 - chromium for `page`
from tests.helpers.ports import free_port
from tests.helpers.web_surface import LOOPBACK, MAX_REQUEST, QUEUE, Surface, served

pytestmark = pytest.mark.security


# -- headers ------------------------------------------------------------------------------
def _directives(policy: str) -> dict[str, list[str]]:
    parts = (d.split() for d in policy.split(";") if d.strip())
    return {name: values for name, *values in parts}


def test_every_response_carries_the_security_headers(surface: Surface) -> None:
    page = httpx.get(surface.url, timeout=10)
    answers = [
        page,
        httpx.get(f"{surface.url}config", timeout=10),
        httpx.get(f"{surface.url}gradio_api/info", timeout=10),
        httpx.get(f"{surface.url}no-such-page", timeout=10),
        httpx.get(surface.url, headers={"Host": "evil.example"}, timeout=10),  # a refusal
    ]
    for answer in answers:
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-dns-prefetch-control"] == "off"
        policy = _directives(answer.headers["content-security-policy"])
        assert policy["default-src"] == ["'none'"]
        assert policy["frame-ancestors"] == ["'none'"]
        assert policy["frame-src"] == ["'none'"] and policy["object-src"] == ["'none'"]
        for name in ("script-src", "img-src", "style-src", "font-src", "connect-src"):
            remote = [v for v in policy[name] if ":" in v.strip("'") and v not in ("data:",)]
            assert not remote and "*" not in policy[name], f"{name} allows {policy[name]}"
    # The page's inline scripts run by their hashes, and no inline script else.
    script_src = _directives(page.headers["content-security-policy"])["script-src"]
    inline = re.findall(rb"<script(?![^>]*\ssrc=)[^>]*>(.*?)</script>", page.content, re.DOTALL)
    hashes = {f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in inline}
    assert {v for v in script_src if v.startswith("'sha256-")} == hashes
    assert len(hashes) >= 4  # gradio's config, API info, mode and boot scripts
    assert "'unsafe-inline'" not in script_src


# -- relays -------------------------------------------------------------------------------
def test_no_route_fetches_a_url_for_a_client(surface: Surface, outbound: list[str]) -> None:
    socket.getaddrinfo("127.0.0.1", 80)  # the recorder is on: this one is recorded
    target = "https://ragloom-relay-probe.example/secret.txt"
    urls = [
        f"gradio_api/file={target}",
        "gradio_api/file=HTTPS://ragloom-relay-probe.example/x",
        "gradio_api/file=%68ttps://ragloom-relay-probe.example/x",
        f"gradio_api/file/{target}",
        f"gradio_api/proxy={target}",
        "gradio_api/proxy=https://ragloom-relay-probe.hf.space/x",
    ]
    for url in urls:
        for method in ("GET", "HEAD"):
            answer = httpx.request(method, surface.url + url, timeout=10)
            assert answer.status_code == 403, url
            if method == "GET":
                assert "does not fetch addresses" in answer.text
    # An event's input file named by URL: gradio would download it before the handler.
    file_data = {"path": target, "orig_name": "x.md", "meta": {"_type": "gradio.FileData"}}
    for route in ("gradio_api/call/index_files", "gradio_api/queue/join"):
        body = {"data": ["My files", [file_data]], "fn_index": 0, "session_hash": "probe"}
        answer = httpx.post(surface.url + route, json=body, timeout=10)
        assert answer.status_code == 403, route
        assert "does not fetch addresses" in answer.text
    assert served(surface) < 2
    assert outbound, "the audit hook recorded nothing: it did not run"
    assert [host for host in outbound if not LOOPBACK.match(host)] == []


def test_a_request_body_over_its_limit_is_refused(surface: Surface) -> None:
    body = {"data": ["x" * (2 * MAX_REQUEST)], "fn_index": 0, "session_hash": "big"}
    answer = httpx.post(f"{surface.url}gradio_api/queue/join", json=body, timeout=10)
    assert answer.status_code == 413
    # In a unit that shows it (a size under a MB once read "0 MB"): MAX_REQUEST is 128 KiB.
    assert "at most 128 KB (MAX_REQUEST_BYTES)" in answer.text
    assert served(surface) < 2


# -- hosts --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "host", ["evil.example", "127.0.0.1.nip.io", "localhost.evil.example", "[::2]", "0.0.0.0"]
)
def test_a_foreign_host_header_is_refused(surface: Surface, host: str) -> None:
    answer = httpx.get(surface.url, headers={"Host": host}, timeout=10)
    assert answer.status_code == 400
    assert "DNS rebinding" in answer.text
    assert f"http://127.0.0.1:{surface.port}/" in answer.text


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "127.0.0.2"])
def test_loopback_host_headers_are_served(surface: Surface, host: str) -> None:
    answer = httpx.get(surface.url, headers={"Host": f"{host}:{surface.port}"}, timeout=10)
    assert answer.status_code == 200


def test_a_write_sent_by_another_site_is_refused(surface: Surface) -> None:
    upload = {"files": ("note.txt", b"a note")}
    for origin in ("http://evil.example", "null", "http://127.0.0.1:1"):
        answer = httpx.post(
            f"{surface.url}gradio_api/upload", files=upload, headers={"Origin": origin}, timeout=10
        )
        assert answer.status_code == 403, origin
        assert "not by Ragloom's own page" in answer.text
    own = surface.url.rstrip("/")
    answer = httpx.post(
        f"{surface.url}gradio_api/upload", files=upload, headers={"Origin": own}, timeout=10
    )
    assert answer.status_code == 200


def test_a_read_sent_by_a_page_on_another_port_is_refused(surface: Surface) -> None:
    # gradio grants CORS reads to any localhost origin: a page served on another port of
    # this machine could read the file names in the page and its config otherwise.
    for path in ("", "config", "gradio_api/info"):
        answer = httpx.get(
            f"{surface.url}{path}", headers={"Origin": "http://localhost:8888"}, timeout=10
        )
        assert answer.status_code == 403, path
        assert "another port of this machine" in answer.text
        assert not any(name.startswith("access-control-") for name in answer.headers)
    own = httpx.get(f"{surface.url}config", headers={"Origin": surface.url.rstrip("/")})
    assert own.status_code == 200
    assert not any(name.startswith("access-control-") for name in own.headers)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "ragloom.lan"])
def test_serve_on_a_host_other_machines_reach_needs_login_and_an_account(
    tmp_path: Path, host: str
) -> None:
    env = {**os.environ, "RAGLOOM_DATA_DIR": str(tmp_path / "data")}
    run = subprocess.run(
        [sys.executable, "-m", "ragloom_app.cli", "serve", "--host", host],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 2
    assert f"serving on {host!r} requires login" in run.stderr
    assert "no account can log in yet" in run.stderr and "SSH tunnel" in run.stderr


def test_serve_on_loopback_serves_guarded_and_stops_on_sigterm(tmp_path: Path) -> None:
    settings = tmp_path / "settings.py"
    settings.write_text(
        "LLMS = {'replay': {'class': 'ragloom.llms.replay.ReplayLLM'}}\nDEFAULT_LLM = 'replay'\n"
        "EMBEDDINGS = {'hash': {'class': 'ragloom_app.testing.HashEmbeddings'}}\n"
        "DEFAULT_EMBEDDING = 'hash'\n"
    )
    port = free_port()
    env = {**os.environ, "RAGLOOM_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "ragloom_app.cli", "--settings", str(settings), "serve"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--no-first-run-docs"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # printed once it listens
        assert line.strip() == f"Ragloom is at http://127.0.0.1:{port}/ (Ctrl-C stops it)"
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert (
            page.status_code == 200
            and "default-src 'none'" in page.headers["content-security-policy"]
        )
        server.terminate()
        assert server.wait(timeout=20) == 0
    finally:
        server.kill()
        server.communicate()
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700


def test_serve_on_a_non_loopback_host_turns_login_on_and_needs_an_account(
    tmp_path: Path,
) -> None:
    from ragloom_app.ui.server import serve

    app = BaseApp(AppSettings(data_dir=tmp_path / "data"))
    with pytest.raises(UnsafeHostError, match="no account can log in yet"):
        serve(app, host="0.0.0.0", block=False, warm_up=False, first_run_docs=False)
    assert app.settings.require_login  # whatever flowsettings said


# -- the queue ----------------------------------------------------------------------------
def test_a_full_queue_refuses_with_a_busy_message(surface: Surface) -> None:
    from gradio_client import Client
    from gradio_client.utils import QueueError

    client = Client(surface.url, verbose=False)
    jobs = [
        client.submit(
            question=f"Question {n}?", mode_id="fullqa", conversation_id=None, api_name="/ask"
        )
        for n in range(QUEUE + 3)
    ]
    time.sleep(0.5)
    assert served(surface) < 2  # the queue is full, the server serves
    outcomes: list[str] = []
    for job in jobs:
        try:
            job.result(timeout=60)
            outcomes.append("answered")
        except QueueError as exc:
            assert "Queue is full" in str(exc)
            outcomes.append("refused")
    assert "answered" in outcomes and "refused" in outcomes, outcomes
    assert len(outcomes) == QUEUE + 3


# -- the policy in a browser --------------------------------------------------------------
# Every violation of the policy, as the page reports it.
WATCH_POLICY = """document.addEventListener('securitypolicyviolation', e =>
  (window.__violations = window.__violations || []).push(
    e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || '')));"""


@pytest.mark.browser
def test_the_whole_ui_works_under_the_policy(page: Any, surface: Surface, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    own = f"127.0.0.1:{surface.port}"
    outside: list[str] = []
    console: list[str] = []
    page.on("request", lambda r: None if urlsplit(r.url).netloc == own else outside.append(r.url))
    page.on("console", lambda m: console.append(m.text))
    page.add_init_script(WATCH_POLICY)
    doc = tmp_path / "zorblax.md"
    doc.write_text("# Zorblax\n\nThe reactor runs at 451 kelvin.\n")

    page.goto(surface.url)
    expect(page.locator("#evidence")).to_contain_text("passages an answer cites", timeout=20_000)
    page.get_by_role("tab", name="Files").click()
    page.locator("#upload input[type=file]").set_input_files(str(doc))
    listed = page.locator("#upload").get_by_role("cell", name=doc.name, exact=True)
    expect(listed).to_be_visible(timeout=20_000)
    page.locator("#index-button").click()
    expect(page.locator("#index-results")).to_contain_text("1 indexed", timeout=60_000)
    expect(page.locator("#file-list")).to_contain_text(doc.name)
    page.get_by_role("tab", name="Plugins").click()
    page.get_by_role("tab", name="Chat").click()
    page.locator("#question textarea").fill("At what temperature does the reactor run?")
    page.locator("#send").click()
    bot = page.locator("#chatbot [data-testid=bot]").last
    expect(bot).to_contain_text("451 kelvin", timeout=60_000)
    expect(page.locator("#evidence")).to_contain_text("451 kelvin")
    page.get_by_text("Steps and usage").click()
    expect(page.locator("#usage")).to_contain_text("LLM call")
    page.get_by_text("Use via API").click()
    expect(page.get_by_text("/ask").first).to_be_visible(timeout=20_000)

    assert page.evaluate("window.__violations || []") == []
    assert [m for m in console if "Content Security Policy" in m] == []
    assert outside == []
    assert doc.name not in {p.name for p in surface.uploads()}, "the copy outlived indexing"
