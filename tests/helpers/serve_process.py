"""``ragloom serve`` as a process of its own on loopback, for tests that stop or kill it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.helpers.cli import PROJECT
from tests.helpers.ports import free_port

__all__ = ["serve_process", "stop"]


def stop(process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Terminate ``process``, killing it if it has not ended within ``timeout``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def serve_process(
    env: Mapping[str, str], log: Path, cwd: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``ragloom serve`` with ``env`` (the project importable too), its output in ``log``:
    its base URL (no ``/api/v1``) once its health route answers, and its process, stopped
    at the end unless the test ended it first."""
    port = free_port()
    environment = {
        **env,
        "PYTHONPATH": os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "ragloom_app.cli", "serve", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=environment, stdout=out, stderr=subprocess.STDOUT, cwd=cwd
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{url} did not answer within 180 s"
            time.sleep(0.2)
        yield url, process
    finally:
        stop(process)
