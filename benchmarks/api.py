"""What the HTTP API costs over answering in the process, and what a login costs.

    .venv/bin/python benchmarks/api.py                 # 8 State of the Union questions
    .venv/bin/python benchmarks/api.py --questions 4

One app, served as `ragloom serve` serves it (UI, guards, API), with the real default LLM
over the State of the Union speech. Each question is answered once to warm the prompt
cache (not timed), then twice in turns each way: in the process (``ChatPage.ask``) and
through ``POST /api/v1/.../ask``, each in a conversation of its own (both save their
turns). The ratio of the two medians is the API's overhead.

The streaming latency is the time from the moment ``ChatPage.ask`` yields an answer
delta in the server to the moment the client has read it off the SSE stream: both run in
this process, so one clock serves both. A login's cost is an argon2id verify (the
parameters of ``ragloom_app.accounts.passwords``), alone and as ``POST /api/v1/login``.

Aims (issue 17): the API adds under 5 % to the answer time; a streamed event reaches the
client within 50 ms of being emitted, p95.
"""

from __future__ import annotations

import argparse
import csv
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, bench_settings, free_port

from ragloom.events import AnswerDelta
from ragloom_app.accounts.passwords import hash_password, verify_password
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage

DATA = REPO.parent / "shared" / "data" / "sotu"
PASSWORD = "correct horse battery"


def _in_process(page: ChatPage, question: str, cid: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    answer = ""
    for item in page.ask(question, mode="fullqa", conversation_id=cid):
        if isinstance(item, AnswerFinished):
            answer = item.record.answer
    return time.perf_counter() - started, answer


def _over_http(client: httpx.Client, cid: str, question: str) -> tuple[float, str]:
    started = time.perf_counter()
    response = client.post(
        f"/conversations/{cid}/ask", json={"question": question, "mode": "fullqa"}
    )
    response.raise_for_status()
    return time.perf_counter() - started, str(response.json()["answer"])


class _EmissionClock:
    """Wraps ChatPage.ask to note when the server yields each answer delta."""

    def __init__(self) -> None:
        self.emitted: list[float] = []
        self._ask = ChatPage.ask

    def __enter__(self) -> _EmissionClock:
        clock = self
        original = self._ask

        def ask(page: ChatPage, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for item in original(page, *args, **kwargs):
                if isinstance(item, AnswerDelta) and item.text:
                    clock.emitted.append(time.perf_counter())
                yield item

        ChatPage.ask = ask  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        ChatPage.ask = self._ask  # type: ignore[method-assign]


def _streamed_latencies(client: httpx.Client, cid: str, question: str) -> list[float]:
    with _EmissionClock() as clock:
        received: list[float] = []
        body = {"question": question, "mode": "fullqa", "stream": True}
        with client.stream("POST", f"/conversations/{cid}/ask", json=body) as response:
            event = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: ") and event == "answer_delta":
                    received.append(time.perf_counter())
    n = min(len(received), len(clock.emitted))
    return [received[i] - clock.emitted[i] for i in range(n)]


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=8, help="State of the Union questions")
    parser.add_argument("--data", type=Path, default=DATA, help="the sotu data folder")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from ragloom_app.ui.server import serve

    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        questions = [row["question"] for row in csv.DictReader(handle)][: args.questions]
    workdir = Path(tempfile.mkdtemp(prefix="ragloom-api-bench-"))
    app = BaseApp(bench_settings(workdir / "data", "sotu")).start()
    app.indices.get("sotu").get_indexing_pipeline({}).run([args.data / "state_of_the_union.txt"])
    page = ChatPage(app)
    running = serve(app, port=free_port(), first_run_docs=False, block=False, warm_up=False)
    client = httpx.Client(base_url=f"{running.url}api/v1", timeout=300)
    try:
        cid = client.post("/conversations").json()["id"]
        # The same work both ways: each saves its turns to a conversation of its own.
        local_cid = page.conversations.create()
        _in_process(page, "Warm up: what is this speech about?")  # loads the model
        local: list[float] = []
        remote: list[float] = []
        for number, question in enumerate(questions, 1):
            _in_process(page, question)  # cold cache: left out
            for _ in range(2):
                seconds, answer_local = _in_process(page, question, local_cid)
                local.append(seconds)
                seconds, answer_remote = _over_http(client, cid, question)
                remote.append(seconds)
            same = "same answer" if answer_local == answer_remote else "answers differ"
            print(f"[{number}/{len(questions)}] {same}", file=sys.stderr)
        latencies: list[float] = []
        for question in questions[:4]:
            latencies += _streamed_latencies(client, cid, question)
        password_hash = hash_password(PASSWORD)
        verifies = []
        for _ in range(10):
            started = time.perf_counter()
            verify_password(password_hash, PASSWORD)
            verifies.append(time.perf_counter() - started)
        app.accounts.add_user("bench", PASSWORD)
        logins = []
        for _ in range(5):
            started = time.perf_counter()
            httpx.post(
                f"{running.url}api/v1/login", json={"name": "bench", "password": PASSWORD}
            ).raise_for_status()
            logins.append(time.perf_counter() - started)
    finally:
        client.close()
        running.close()
        shutil.rmtree(workdir, ignore_errors=True)

    inproc, http = statistics.median(local), statistics.median(remote)
    print(f"\nHTTP API over in-process ChatPage.ask, FullQA, {len(questions)} questions")
    print(f"  in process   median {inproc:6.3f} s/answer ({len(local)} answers)")
    print(f"  HTTP API     median {http:6.3f} s/answer ({len(remote)} answers)")
    print(f"  ratio        {http / inproc:.3f}x  ({(http / inproc - 1) * 100:+.1f} %; aim < +5 %)")
    print(f"\nSSE: answer delta emitted -> read by the client, {len(latencies)} events")
    print(
        f"  median {statistics.median(latencies) * 1000:.2f} ms, p95 "
        f"{_p95(latencies) * 1000:.2f} ms, max {max(latencies) * 1000:.2f} ms (aim p95 < 50 ms)"
    )
    print("\nLogin (argon2id, RFC 9106 low-memory: t=3, m=64 MiB, p=4)")
    print(f"  verify          median {statistics.median(verifies) * 1000:.1f} ms")
    print(f"  POST /login     median {statistics.median(logins) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
