"""The examples of docs/api.md run against a live server, as a reader would run them."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from pathlib import Path

from tests.helpers.api_server import ANSWER, LiveServer, live_server

__all__ = ["live_server"]

PAGE = Path(__file__).resolve().parents[3] / "docs" / "api.md"
SERVED_AT = "http://127.0.0.1:7860"


def _blocks(language: str, server: LiveServer) -> list[str]:
    text = PAGE.read_text(encoding="utf-8").replace(SERVED_AT, server.url.rstrip("/"))
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_the_curl_examples_answer_as_the_page_says(live_server: LiveServer) -> None:
    ask, stream = _blocks("bash", live_server)
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", f"{ask}\necho\n{stream}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer_line, *events = run.stdout.split("\n", 1)
    answer = json.loads(answer_line)
    assert answer["answer"] == ANSWER and answer["citations"][0]["source"] == "reactor.md"
    assert answer["grounding"]["status"] == "supported"
    assert "event: answer_delta" in events[0] and "event: done" in events[0]


def test_the_openai_client_example_prints_the_answer_and_its_citations(
    live_server: LiveServer,
) -> None:
    (example,) = _blocks("python", live_server)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, "docs/api.md", "exec"), {"__name__": "docs_example"})
    assert printed.getvalue().splitlines() == [ANSWER, "1 reactor.md None"]
