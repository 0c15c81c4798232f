"""The users of ``load.py``: askers, uploaders and the jobs they follow, over the HTTP API.

They run in a process of their own, started with ``spawn``: this module imports only what
the clients need (the app's imports would be 1.3 s of CPU taken from the server under
load, work `ragloom serve` never does).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

__all__ = ["JOB_DEADLINE", "Run", "percentile", "run_load", "warm_up"]

JOB_DEADLINE = 300.0  # seconds the uploaders follow their jobs after the askers are done


@dataclass
class Run:
    """What one load run saw."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    uploads: int = 0
    seconds: float = 0.0
    job_waits: list[float] = field(default_factory=list)  # created to started, s
    job_totals: list[float] = field(default_factory=list)  # created to finished, s
    # When each answer began and ended (wall clock, for --outage), its error (None: none).
    answers: list[tuple[float, float, str | None]] = field(default_factory=list)
    # CPU the clients' process spent on the run (the machine's cores serve both sides).
    client_cpu_seconds: float = 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _asker(client: httpx.AsyncClient, questions: list[str], run: Run) -> None:
    made = await client.post("/conversations")
    cid = made.json()["id"]
    for question in questions:
        started, began = time.perf_counter(), time.time()
        wait = 0.5  # after a failure, as a client would (a user asks again a moment later)
        try:
            answer = await client.post(
                f"/conversations/{cid}/ask", json={"question": question, "mode": "fullqa"}
            )
            error = None if answer.status_code == 200 else f"{answer.status_code}: {answer.text}"
            if error is None:  # an answer that says a step failed ("searching ... failed")
                failed = [s for s in answer.json()["steps"] if s.get("error")]
                error = f"200, step {failed[0]['step']}: {failed[0]['error']}" if failed else None
            elif answer.status_code == 503:  # as a client should: wait as told (at most 2 s)
                told = answer.headers.get("Retry-After", "")
                wait = min(2.0, float(told)) if told.isdigit() else 1.0
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        run.answers.append((began, time.time(), error and error[:160]))
        if error is None:
            run.latencies.append(time.perf_counter() - started)
        else:
            run.errors.append(error[:160])
            await asyncio.sleep(wait)


async def _uploader(client: httpx.AsyncClient, index: str, done: asyncio.Event, run: Run) -> None:
    created = await client.post("/indices", json={"name": index})
    if created.status_code != 201:
        run.errors.append(f"index {created.status_code}: {created.text[:120]}")
        return
    jobs, number = [], 0
    while not done.is_set():
        number += 1
        text = f"Note {number} of {index}: the pumps run at {number} rpm.".encode()
        files = [("files", (f"note-{number}.md", text))]
        sent = await client.post(f"/indices/{index}/files", files=files)
        if sent.status_code == 202:
            jobs.append(sent.json()["job"]["id"])
        elif sent.status_code != 429:  # busy: the bound on uploads at once, try later
            run.errors.append(f"upload {sent.status_code}: {sent.text[:120]}")
        await asyncio.sleep(0.5)
    run.uploads += len(jobs)
    await _follow_jobs(client, jobs, run)


async def _follow_jobs(client: httpx.AsyncClient, jobs: list[str], run: Run) -> None:
    """Wait for each upload's job to finish (at most :data:`JOB_DEADLINE` s in all); how
    long each waited in the queue and took in all, from its own timestamps."""
    deadline = time.monotonic() + JOB_DEADLINE
    for job_id in jobs:
        seen = await _finished_job(client, job_id, deadline, run)
        if seen is None:
            continue
        if seen["status"] != "done" or any(o["status"] == "failed" for o in seen["outcomes"]):
            run.errors.append(f"job {job_id} {seen['status']}: {seen['error'] or seen['outcomes']}")
            continue
        created, started, finished = (
            datetime.fromisoformat(seen[moment])
            for moment in ("created_at", "started_at", "finished_at")
        )
        run.job_waits.append((started - created).total_seconds())
        run.job_totals.append((finished - created).total_seconds())


async def _finished_job(
    client: httpx.AsyncClient, job_id: str, deadline: float, run: Run
) -> dict[str, Any] | None:
    """The job once it ended; ``None`` (and an error noted) if it could not be read or had
    not ended by ``deadline``."""
    while True:
        try:
            shown = await client.get(f"/jobs/{job_id}")
        except httpx.HTTPError as exc:
            run.errors.append(f"job {job_id}: {type(exc).__name__}: {exc}")
            return None
        if shown.status_code == 503 and time.monotonic() < deadline:
            await asyncio.sleep(1.0)  # the app's database is down: the job is not lost
            continue
        if shown.status_code != 200:
            run.errors.append(f"job {job_id}: {shown.status_code}: {shown.text[:120]}")
            return None
        seen: dict[str, Any] = shown.json()
        if seen["status"] not in ("queued", "running"):
            return seen
        if time.monotonic() > deadline:
            run.errors.append(f"job {job_id} still {seen['status']} after {JOB_DEADLINE} s")
            return None
        await asyncio.sleep(0.2)


async def _load(
    url: str,
    keys: list[str],
    uploaders: list[str],
    questions: list[list[str]],
    timeout: float,
    notes: str,
) -> Run:
    run = Run()
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=len(keys) + len(uploaders) + 4)
    clients = [
        httpx.AsyncClient(
            base_url=f"{url}api/v1",
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            limits=limits,
        )
        for key in keys
    ]
    try:
        upload_tasks = [
            asyncio.create_task(
                _uploader(clients[len(keys) - len(uploaders) + i], f"{n} {notes}", done, run)
            )
            for i, n in enumerate(uploaders)
        ]
        started = time.perf_counter()
        await asyncio.gather(
            *(
                _asker(c, asked, run)
                for c, asked in zip(clients[: len(keys) - len(uploaders)], questions, strict=True)
            )
        )
        run.seconds = time.perf_counter() - started
        done.set()
        await asyncio.gather(*upload_tasks)
    finally:
        for client in clients:
            await client.aclose()
    return run


def warm_up(url: str, key: str, timeout: float) -> None:
    """One answer through the API, not timed: what a first request loads is not load. The
    question is one the speech answers (so the model is asked) but not one of the set's."""
    with httpx.Client(
        base_url=f"{url}api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=timeout
    ) as client:
        cid = client.post("/conversations").json()["id"]
        asked = {"question": "What does the speech say about inflation?", "mode": "fullqa"}
        answer = client.post(f"/conversations/{cid}/ask", json=asked)
        answer.raise_for_status()
        assert answer.json()["usage"]["llm_calls"] >= 1, answer.json()


def run_load(
    url: str,
    keys: list[str],
    uploaders: list[str],
    questions: list[list[str]],
    timeout: float,
    notes: str = "notes",
) -> Run:
    """The askers (the first ``len(keys) - len(uploaders)`` keys) each ask their list of
    ``questions`` in a new conversation, while the ``uploaders`` upload into a new index of
    their own named ``"<uploader> <notes>"``; what they saw."""
    cpu = time.process_time()
    run = asyncio.run(_load(url, keys, uploaders, questions, timeout, notes))
    run.client_cpu_seconds = time.process_time() - cpu
    return run
