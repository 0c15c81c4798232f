"""A Chroma server (``chroma run``, the one the chromadb package installs) on loopback,
over a temporary folder, for the tests of indices whose vectors live on a server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.helpers.ports import free_port

__all__ = ["ChromaServer", "chroma_server"]

STARTUP_SECONDS = 60.0


def _chroma_command() -> str:
    return str(Path(sys.executable).with_name("chroma"))


@dataclass
class ChromaServer:
    """A running server: its URL (``CHROMA_SERVER``), and ``restart()`` for fault tests."""

    url: str
    port: int
    path: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the server (its data stays in ``path``)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)

    def start(self) -> None:
        """Start it (again) on the same port and folder; returns once it answers."""
        self.process = subprocess.Popen(
            [
                _chroma_command(),
                *("run", "--path", str(self.path)),
                *("--host", "127.0.0.1", "--port", str(self.port)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            time.sleep(0.2)
        raise RuntimeError(f"the Chroma server did not answer within {STARTUP_SECONDS:.0f} s")


@contextmanager
def chroma_server(folder: Path | None = None) -> Iterator[ChromaServer]:
    """A started server over ``folder`` (kept afterwards, with what the server stored), or
    over a temporary folder deleted afterwards; stopped at the end of the block."""
    port = free_port()
    kept = folder is not None
    folder = folder if folder is not None else Path(tempfile.mkdtemp(prefix="ragloom-chroma-"))
    server = ChromaServer(f"http://127.0.0.1:{port}", port, folder / "db", None)  # type: ignore[arg-type]
    try:
        server.start()
        yield server
    finally:
        if server.process is not None:
            server.stop()
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)
