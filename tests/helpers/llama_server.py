"""A real ``python -m llama_cpp.server`` on a free loopback port, for tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.ports import free_port

SERVER_START_SECONDS = 120


@contextlib.contextmanager
def llama_server(gguf: Path, log_dir: Path, chat_format: str | None = None) -> Iterator[str]:
    """Serve ``gguf`` until the block ends; yields the /v1 base URL."""
    port = free_port()
    log_path = log_dir / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(os.cpu_count() or 1),
    ]
    if chat_format:
        command += ["--chat_format", chat_format]
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
