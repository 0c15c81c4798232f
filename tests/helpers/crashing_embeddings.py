"""Embeddings that kill their own process on a marker text: a crash nothing can catch.

As the kernel's OOM killer or a crash in a native library would end a process while it
embeds a file, :class:`CrashingEmbeddings` sends SIGKILL to its own process when a text
holds :data:`MARKER`: no exception, no ``finally``, no clean-up. It runs in the process
that indexes (embeddings are not sandboxed), so the crash takes that process down.

Every call is appended to ``calls_file`` first (one JSON line: the pid, whether a text
held the marker and, when ``RAGLOOM_TEST_PORT`` names the port of a ``ragloom serve`` of
this process, whether that server answered ``GET /`` at that moment). A test reads the
lines to tell which command called the embeddings, and that a recovery ran only once
the server was serving.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from theflow import Param

from ragloom_app.testing import HashEmbeddings

__all__ = ["MARKER", "CrashingEmbeddings", "read_calls"]

MARKER = "KILL-THE-INDEXER"


def _served(port: str) -> int | None:
    """The status of ``GET /`` on the local server at ``port``, or None if none answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            return int(response.status)
    except OSError:
        return None


class CrashingEmbeddings(HashEmbeddings):
    """:class:`HashEmbeddings` that SIGKILL their process on a text holding MARKER."""

    calls_file: str = Param("", help="Where every call is recorded, one JSON line each.")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        marked = any(MARKER in text for text in texts)
        call: dict[str, object] = {"pid": os.getpid(), "marker": marked}
        port = os.environ.get("RAGLOOM_TEST_PORT")
        if marked and port:
            call["served"] = _served(port)
        with Path(self.calls_file).open("a", encoding="utf-8") as log:
            log.write(json.dumps(call) + "\n")
        if marked:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().embed_documents(texts)


def read_calls(calls_file: Path) -> list[dict[str, object]]:
    """The calls recorded so far, oldest first."""
    if not calls_file.exists():
        return []
    return [json.loads(line) for line in calls_file.read_text(encoding="utf-8").splitlines()]
