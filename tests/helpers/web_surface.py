"""A live Ragloom server with small web limits, for the web-surface security tests.

``surface`` (module scope) serves a fresh data folder with limits small enough that crafted
requests cross them fast: a replay LLM that takes its time (to keep the queue busy) and
hash embeddings, so no model loads. ``outbound`` lists every host the process resolves or
connects to while a test runs. A test module imports both fixtures by name.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings
from tests.helpers.outbound import recorded_hosts
from tests.helpers.ports import free_port

KB = 1024
MAX_FILE = 256 * KB
MAX_FILES = 3
MAX_UPLOAD = 64 * KB * KB
MAX_REQUEST = 128 * KB
QUEUE = 4
ANSWER_DELAY = 1.0
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$")


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
    port = free_port()
    running = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield Surface(running.url, port, app, data_dir)
    finally:
        running.close()


@pytest.fixture
def outbound() -> Iterator[list[str]]:
    """Every host the process resolves or connects to while the test runs."""
    with recorded_hosts() as hosts:
        yield hosts


def served(surface: Surface) -> float:
    """Seconds the server takes to answer another request (it must be serving)."""
    start = time.perf_counter()
    assert httpx.get(f"{surface.url}config", timeout=10).status_code == 200
    return time.perf_counter() - start


def raw_request(surface: Surface, request: bytes) -> tuple[int, str]:
    """Send a hand-made HTTP request; returns the status and the body of the answer."""
    with socket.create_connection(("127.0.0.1", surface.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def index_upload(surface: Surface, paths: list[Path]) -> Any:
    from gradio_client import Client, handle_file

    client = Client(surface.url, verbose=False)
    return client.predict("My files", [handle_file(str(p)) for p in paths], api_name="/index_files")
