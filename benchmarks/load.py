"""Many users at once against the HTTP API: the app's own overhead under load.

    .venv/bin/python benchmarks/load.py                  # 16 users, 8 questions each, 2 uploaders
    .venv/bin/python benchmarks/load.py --users 8 --questions 4

The app is served as `ragloom serve` serves it (guards, login, API) with login on, over
the State of the Union speech and the real embedding model, but its LLM is a **stand-in**:
an OpenAI-compatible endpoint on loopback that streams a fixed cited answer at once
(``ragloom_app.testing.openai_standin``). What is measured is the app (the API, retrieval,
the grounding check, the database, the answer slots), not the 2-core model. Each user has
an account and an API key, and asks its questions one after another in a conversation of
its own (FullQA, one JSON answer each; each user its own questions of the set's 74);
meanwhile each of ``--uploaders`` other users uploads a small file into its own index,
again and again, until the askers are done.
Bounded loops: every user asks exactly ``--questions`` questions.

The baseline, in the same run: the same questions asked by one user alone, on the same
path; the ratio of the p50s shows what contention adds, apart from the machine's speed.
The clients run in a process of their own, beside the server's, on the same 2 cores.
With ``--servers`` the app database is a throwaway PostgreSQL cluster and the vectors are
on a ``chroma run`` server, both on loopback (the tests' helpers start them). The aim
(issue 18): 16 users at p95 under 1 s for a FullQA answer, with 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import logging
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, bench_settings

from ragloom_app.app import BaseApp
from ragloom_app.testing.openai_standin import fake_openai

DATA = REPO.parent / "shared" / "data" / "sotu"
PASSWORD = "correct horse battery"
ANSWER = "The speech says so [1]."


@dataclass
class Run:
    """What one load run saw."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    uploads: int = 0
    seconds: float = 0.0


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _asker(client: httpx.AsyncClient, questions: list[str], run: Run) -> None:
    made = await client.post("/conversations")
    cid = made.json()["id"]
    for question in questions:
        started = time.perf_counter()
        try:
            answer = await client.post(
                f"/conversations/{cid}/ask", json={"question": question, "mode": "fullqa"}
            )
            if answer.status_code != 200:
                run.errors.append(f"{answer.status_code}: {answer.text[:120]}")
                continue
        except httpx.HTTPError as exc:
            run.errors.append(f"{type(exc).__name__}: {exc}")
            continue
        run.latencies.append(time.perf_counter() - started)


async def _uploader(client: httpx.AsyncClient, name: str, done: asyncio.Event, run: Run) -> None:
    created = await client.post("/indices", json={"name": f"{name} notes"})
    if created.status_code != 201:
        run.errors.append(f"index {created.status_code}: {created.text[:120]}")
        return
    number = 0
    while not done.is_set():
        number += 1
        text = f"Note {number} of {name}: the pumps run at {number} rpm.".encode()
        files = [("files", (f"note-{number}.md", text))]
        sent = await client.post(f"/indices/{name} notes/files", files=files)
        if sent.status_code == 202:
            run.uploads += 1
        elif sent.status_code != 429:  # busy: the bound on uploads at once, try later
            run.errors.append(f"upload {sent.status_code}: {sent.text[:120]}")
        await asyncio.sleep(0.5)


async def _load(url: str, keys: list[str], uploaders: list[str], questions: list[list[str]]) -> Run:
    run = Run()
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=len(keys) + len(uploaders) + 4)
    clients = [
        httpx.AsyncClient(
            base_url=f"{url}api/v1",
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
            limits=limits,
        )
        for key in keys
    ]
    try:
        upload_tasks = [
            asyncio.create_task(_uploader(clients[len(keys) - len(uploaders) + i], n, done, run))
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


def _warm_up(url: str, key: str) -> None:
    """One answer through the API, not timed: what a first request loads is not load."""
    with httpx.Client(
        base_url=f"{url}api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=120
    ) as client:
        cid = client.post("/conversations").json()["id"]
        asked = {"question": "What is this speech about?", "mode": "fullqa"}
        client.post(f"/conversations/{cid}/ask", json=asked).raise_for_status()


def _run_load(url: str, keys: list[str], uploaders: list[str], questions: list[list[str]]) -> Run:
    return asyncio.run(_load(url, keys, uploaders, questions))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16, help="users asking at once")
    parser.add_argument("--questions", type=int, default=8, help="questions each user asks")
    parser.add_argument("--uploaders", type=int, default=2, help="users uploading meanwhile")
    parser.add_argument("--data", type=Path, default=DATA, help="the sotu data folder")
    parser.add_argument(
        "--servers",
        action="store_true",
        help="the app database on a throwaway PostgreSQL and the vectors on a `chroma run`",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from ragloom_app.ui.server import serve

    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        every = [row["question"] for row in csv.DictReader(handle)]
    # Each user asks questions of its own, in turn through the set (74 questions).
    questions = [
        [every[(user * args.questions + j) % len(every)] for j in range(args.questions)]
        for user in range(args.users)
    ]
    workdir = Path(tempfile.mkdtemp(prefix="ragloom-load-bench-"))
    with contextlib.ExitStack() as servers, fake_openai() as standin:
        standin.reply = ANSWER
        settings = replace(bench_settings(workdir / "data", "sotu"), require_login=True)
        if args.servers:
            sys.path.insert(0, str(REPO))
            from tests.helpers.chroma_server import chroma_server
            from tests.helpers.postgres import fresh_database, throwaway_postgres

            settings.database_url = fresh_database(servers.enter_context(throwaway_postgres()))
            settings.chroma_server = servers.enter_context(chroma_server()).url
        settings.llms = {
            "standin": {
                "class": "ragloom.llms.openai_compat.OpenAIChat",
                "base_url": standin.url,
                "model": "standin",
                "server_kind": "openai",
                "max_concurrent": args.users,
            }
        }
        settings.default_llm = "standin"
        app = BaseApp(settings).start()
        app.indices.get("sotu").get_indexing_pipeline({}).run(
            [args.data / "state_of_the_union.txt"]
        )
        names = [f"asker{i}" for i in range(args.users)] + [
            f"uploader{i}" for i in range(args.uploaders)
        ]
        keys = []
        for name in names:
            user = app.accounts.add_user(name, PASSWORD)
            keys.append(app.accounts.create_key(user, "load")[1])
        app.embeddings().embed_query("warm up")
        running = serve(app, port=_port(), first_run_docs=False, block=False, warm_up=False)
        try:
            _warm_up(running.url, keys[0])
            # The clients run in a process of their own: in the server's, their work would
            # hold the interpreter's lock the server needs.
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                alone = pool.apply(_run_load, (running.url, keys[:1], [], questions[:1]))
                crowd = pool.apply(_run_load, (running.url, keys, names[args.users :], questions))
        finally:
            running.close()
    total = args.users * args.questions
    print(f"load: {args.users} users x {args.questions} FullQA questions ({total} answers),")
    print(f"  {args.uploaders} users uploading meanwhile; LLM: the loopback stand-in (fixed text)")
    where = "PostgreSQL and a Chroma server" if args.servers else "SQLite and embedded Chroma"
    print(f"  stores: {where}")
    for label, run in (("1 user (baseline)", alone), (f"{args.users} users", crowd)):
        print(
            f"  {label:18} p50 {_p(run.latencies, 0.5) * 1000:7.0f} ms   "
            f"p95 {_p(run.latencies, 0.95) * 1000:7.0f} ms   "
            f"errors {len(run.errors)}   "
            f"{len(run.latencies) / run.seconds:5.1f} answers/s"
        )
    print(f"  uploads taken meanwhile: {crowd.uploads}")
    ratio = statistics.median(crowd.latencies) / statistics.median(alone.latencies)
    print(f"  p50 ratio, {args.users} users over 1: {ratio:.2f}x")
    p95 = _p(crowd.latencies, 0.95)
    verdict = "met" if p95 < 1.0 and not crowd.errors else "NOT met"
    print(f"  aim (p95 < 1 s, 0 errors at {args.users} users): {verdict}")
    for error in crowd.errors[:5]:
        print(f"  error: {error}")


if __name__ == "__main__":
    main()
