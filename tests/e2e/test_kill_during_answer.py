"""SIGKILL of ``ragloom serve`` in the middle of an answer, then a restart.

A real server process (SQLite, embedded Chroma and BM25, hash embeddings) answers one
question, then is killed while it streams the answer to a second one (its LLM is made to
wait then). After a restart the conversation holds the first exchange whole and
the second question without any part of an answer, it goes on, the database passes SQLite's
integrity check and the index ``ragloom index check``.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.helpers.api_jobs import finished_job
from tests.helpers.api_server import DOCUMENTS
from tests.helpers.cli import cli_env, run_ragloom
from tests.helpers.serve_process import serve_process

ANSWER = "The Zorblax reactor runs at 451 kelvin [1]."
SLOW_QUESTION = "What was the reactor's first temperature?"
SETTINGS = """
LLMS = {{"slow": {{"class": "tests.helpers.slow_llm.SlowLLM", "replies": [{answer!r}],
                   "delay": 300, "hold_file": {hold!r}}}}}
DEFAULT_LLM = "slow"
EMBEDDINGS = {{"hash": {{"class": "ragloom_app.testing.HashEmbeddings"}}}}
DEFAULT_EMBEDDING = "hash"
FIRST_RUN_DOCS = None
"""


@contextmanager
def serving(folder: Path, settings: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ``ragloom serve`` with its data in ``folder / "data"``: its API's URL, its process."""
    log = folder / f"serve-{time.monotonic_ns()}.log"
    with serve_process(cli_env(folder / "data", settings), log, cwd=folder) as (url, process):
        yield f"{url}/api/v1", process


def _roles_and_texts(url: str, conversation: str) -> list[tuple[str, str]]:
    messages = httpx.get(f"{url}/conversations/{conversation}", timeout=30).json()["messages"]
    return [(m["role"], m["content"]) for m in messages]


def test_sigkill_during_an_answer_leaves_no_half_answer(tmp_path: Path) -> None:
    settings = tmp_path / "settings.py"
    hold = tmp_path / "hold"  # while it exists, the LLM waits
    settings.write_text(SETTINGS.format(answer=ANSWER, hold=str(hold)), encoding="utf-8")
    with serving(tmp_path, settings) as (url, process):
        uploaded = httpx.post(
            f"{url}/indices/My files/files",
            files=[("files", ("reactor.md", DOCUMENTS["reactor.md"].encode()))],
            timeout=60,
        )
        assert uploaded.status_code == 202, uploaded.text
        job = finished_job(
            lambda path: httpx.get(f"{url}{path}", timeout=30), uploaded.json()["job"]["id"]
        )
        assert [(o["file"], o["status"]) for o in job["outcomes"]] == [("reactor.md", "indexed")], (
            job
        )
        conversation = httpx.post(f"{url}/conversations", timeout=30).json()["id"]
        first = httpx.post(
            f"{url}/conversations/{conversation}/ask",
            json={"question": "How hot is the reactor?"},
            timeout=60,
        )
        assert first.status_code == 200, first.text
        # The second answer streams until its LLM call, which waits: the process dies then.
        hold.touch()
        events = []
        with httpx.stream(
            "POST",
            f"{url}/conversations/{conversation}/ask",
            json={"question": SLOW_QUESTION, "stream": True},
            timeout=60,
        ) as streamed:
            # Kept, not dropped: a dropped line iterator closes the connection, and the
            # server then stores the answer as stopped by its client, not killed.
            lines = streamed.iter_lines()
            for line in lines:
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
                    break
            time.sleep(1.0)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            del lines
        assert events, "the answer had not begun streaming"

    hold.unlink()
    db = tmp_path / "data" / "ragloom.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with serving(tmp_path, settings) as (url, _):
        assert _roles_and_texts(url, conversation) == [
            ("user", "How hot is the reactor?"),
            ("assistant", ANSWER),
            ("user", SLOW_QUESTION),  # asked, never answered: no part of an answer kept
        ]
        again = httpx.post(
            f"{url}/conversations/{conversation}/ask",
            json={"question": "And how hot is it now?"},
            timeout=60,
        )
        assert again.status_code == 200, again.text
        assert _roles_and_texts(url, conversation)[-2:] == [
            ("user", "And how hot is it now?"),
            ("assistant", ANSWER),
        ]
    checked = run_ragloom("index", "check", env=cli_env(tmp_path / "data", settings), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
