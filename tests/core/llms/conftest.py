"""Shared fixtures of the LLM tests: the bundled model, one loaded chat model, a real server.

The real-model fixtures are session-scoped so that the 491 MB model is joined and loaded
once per test run (the module-level model cache of ``LlamaCppChat`` is shared anyway).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.llms.llamacpp import LlamaCppChat
from ragloom.models.bundled_llm import bundled_model_path

SERVER_START_SECONDS = 120


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (bound once, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (the probe socket is closed again)."""
    return free_port()


@pytest.fixture(scope="session")
def bundled_gguf() -> Path:
    """The joined, verified default model (in the user's model cache, as the app uses it)."""
    return bundled_model_path()


@pytest.fixture(scope="session")
def llama_chat(bundled_gguf: Path) -> LlamaCppChat:
    """The bundled model in-process, loaded once for the session."""
    chat = LlamaCppChat(model_path=str(bundled_gguf))
    chat.llama()  # load and warm up here, not inside the first test's timing
    return chat


@pytest.fixture(scope="session")
def llama_server(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(bundled_gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(os.cpu_count() or 1),
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_until_serving(process, f"{base_url}/models", log_path)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _wait_until_serving(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"llama_cpp.server did not answer {url} within {SERVER_START_SECONDS} s")
