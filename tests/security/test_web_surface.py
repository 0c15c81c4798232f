"""The web surface against a live server: uploads, headers, relays, hosts, the queue.

One server over a fresh data folder, with small limits so that crafted requests cross
them fast: a replay LLM that takes its time (to keep the queue busy) and hash embeddings,
so no model loads. Every refusal is checked for its status, its words, and that the
server went on serving meanwhile.
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings
from ragloom_app.web.hosts import UnsafeHostError
from tests.e2e.conftest import browser_type_launch_args  # noqa: F401 - chromium for `page`
from tests.helpers.heartbeat import Heartbeat

pytestmark = pytest.mark.security

KB = 1024
MAX_FILE = 256 * KB
MAX_FILES = 3
MAX_UPLOAD = 64 * KB * KB
MAX_REQUEST = 128 * KB
QUEUE = 4
ANSWER_DELAY = 1.0
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$")


# -- outbound connections: an audit hook (it cannot be removed: it records only when asked)
_outbound: list[str] | None = None
_hooked = False


def _record(event: str, args: tuple[Any, ...]) -> None:
    if _outbound is None or not event.startswith("socket."):
        return
    if event == "socket.connect":
        address = args[1]
        _outbound.append(str(address[0] if isinstance(address, tuple) else address))
    elif event == "socket.getaddrinfo":
        _outbound.append(str(args[0]))


@dataclass
class Surface:
    url: str
    port: int
    app: BaseApp
    data_dir: Path

    def uploads(self) -> list[Path]:
        """The files (not folders) in gradio's upload cache."""
        return sorted(p for p in (self.data_dir / "uploads").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def surface(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surface]:
    from ragloom_app.ui.server import serve

    data_dir = tmp_path_factory.mktemp("web-surface") / "data"
    settings = AppSettings(
        data_dir=data_dir,
        llms={
            "slow": {
                "class": "tests.helpers.slow_llm.SlowLLM",
                "delay": ANSWER_DELAY,
                "replies": ["The reactor runs at 451 kelvin [1]."],
            }
        },
        default_llm="slow",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
        max_file_bytes=MAX_FILE,
        max_files_per_upload=MAX_FILES,
        max_upload_request_bytes=MAX_UPLOAD,
        max_request_bytes=MAX_REQUEST,
        queue_max_size=QUEUE,
    )
    settings.first_run_docs = None
    app = BaseApp(settings, plugin_manager=create_plugin_manager()).start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    running = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield Surface(running.url, port, app, data_dir)
    finally:
        running.close()


@pytest.fixture
def outbound() -> Iterator[list[str]]:
    """Every host the process resolves or connects to while the test runs."""
    global _outbound, _hooked
    if not _hooked:
        sys.addaudithook(_record)
        _hooked = True
    _outbound = []
    try:
        yield _outbound
    finally:
        _outbound = None


def _served(surface: Surface) -> float:
    """Seconds the server takes to answer another request (it must be serving)."""
    start = time.perf_counter()
    assert httpx.get(f"{surface.url}config", timeout=10).status_code == 200
    return time.perf_counter() - start


def _raw(surface: Surface, request: bytes) -> tuple[int, str]:
    """Send a hand-made HTTP request; returns the status and the body of the answer."""
    with socket.create_connection(("127.0.0.1", surface.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def _index_upload(surface: Surface, paths: list[Path]) -> Any:
    from gradio_client import Client, handle_file

    client = Client(surface.url, verbose=False)
    return client.predict("My files", [handle_file(str(p)) for p in paths], api_name="/index_files")


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
    assert _served(surface) < 2


def test_an_upload_over_its_total_is_refused_before_it_is_read(surface: Surface) -> None:
    huge = 10 * KB**3  # declared, never sent: the refusal comes before any byte is read
    request = (
        b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\n"
        + f"Content-Length: {huge}\r\nConnection: close\r\n\r\n".encode()
    )
    start = time.perf_counter()
    status, text = _raw(surface, request)
    assert status == 413
    assert "at most 64 MB (MAX_UPLOAD_REQUEST_BYTES)" in text
    assert time.perf_counter() - start < 2
    chunked = (
        b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
    )
    assert _raw(surface, chunked) == (
        411,
        "Refused: an upload must state its size (a Content-Length header).",
    )
    assert _served(surface) < 2


def test_too_many_files_are_refused_whole(surface: Surface, tmp_path: Path) -> None:
    from gradio_client.exceptions import AppError

    files = []
    for number in range(MAX_FILES + 1):
        files.append(tmp_path / f"many-{number}.md")
        files[-1].write_text(f"# Note {number}\n\nA note numbered {number}.\n")
    with pytest.raises(AppError, match=r"Too many files in one upload: 4\. The limit is 3 files"):
        _index_upload(surface, files)
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
    results, _, _ = _index_upload(surface, [doc])
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
    _index_upload(surface, [doc])  # stored file, SQLite, Chroma, full-text index
    paths = [surface.data_dir, *surface.data_dir.rglob("*")]
    assert len(paths) > 10
    loose = [f"{p} {stat.S_IMODE(p.lstat().st_mode):o}" for p in paths if p.lstat().st_mode & 0o077]
    assert loose == []
    assert stat.S_IMODE(surface.data_dir.stat().st_mode) == 0o700


def test_an_existing_open_data_folder_is_tightened(tmp_path: Path) -> None:
    from ragloom_app.app import make_private_folder

    folder = tmp_path / "appdata"
    folder.mkdir()
    folder.chmod(0o755)
    make_private_folder(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_data_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    from ragloom_app.app import make_private_folder
    from ragloom_app.settings import SettingsError

    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    if os.getuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    os.chown(folder, 65534, 65534)  # nobody
    with pytest.raises(SettingsError, match="belongs to another user"):
        make_private_folder(folder)


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
        assert answer.headers["referrer-policy"] == "no-referrer"
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
    assert _served(surface) < 2
    assert outbound, "the audit hook recorded nothing: it did not run"
    assert [host for host in outbound if not LOOPBACK.match(host)] == []


def test_a_request_body_over_its_limit_is_refused(surface: Surface) -> None:
    body = {"data": ["x" * (2 * MAX_REQUEST)], "fn_index": 0, "session_hash": "big"}
    answer = httpx.post(f"{surface.url}gradio_api/queue/join", json=body, timeout=10)
    assert answer.status_code == 413
    assert "at most 128 KB" not in answer.text  # sizes under a MB are said in bytes
    assert f"at most {MAX_REQUEST} bytes (MAX_REQUEST_BYTES)" in answer.text
    assert _served(surface) < 2


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
def test_serve_refuses_a_host_other_machines_reach(tmp_path: Path, host: str) -> None:
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
    assert f"refusing to serve on {host!r}" in run.stderr
    assert "no login yet" in run.stderr and "SSH tunnel" in run.stderr
    assert not (tmp_path / "data").exists(), "nothing is opened before the refusal"


def test_serve_on_loopback_serves_guarded_and_stops_on_sigterm(tmp_path: Path) -> None:
    settings = tmp_path / "settings.py"
    settings.write_text(
        "LLMS = {'replay': {'class': 'ragloom.llms.replay.ReplayLLM'}}\nDEFAULT_LLM = 'replay'\n"
        "EMBEDDINGS = {'hash': {'class': 'ragloom_app.testing.HashEmbeddings'}}\n"
        "DEFAULT_EMBEDDING = 'hash'\n"
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
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


def test_serve_itself_refuses_a_non_loopback_host(tmp_path: Path) -> None:
    from ragloom_app.ui.server import serve

    app = BaseApp(AppSettings(data_dir=tmp_path / "data"))
    with pytest.raises(UnsafeHostError, match="reverse proxy"):
        serve(app, host="0.0.0.0", block=False, warm_up=False, first_run_docs=False)
    assert not app.started


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
    assert _served(surface) < 2  # the queue is full, the server serves
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
