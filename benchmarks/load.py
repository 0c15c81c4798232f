"""Many users at once against the HTTP API: latency, errors and throughput under load.

    .venv/bin/python benchmarks/load.py                  # 16 users, 8 questions each, 2 uploaders
    .venv/bin/python benchmarks/load.py --servers        # PostgreSQL and `chroma run`
    .venv/bin/python benchmarks/load.py --processes 2    # 2 apps behind haproxy, 1 worker
    .venv/bin/python benchmarks/load.py --llm local --users 16 --questions 1
    .venv/bin/python benchmarks/load.py --outage chroma --questions 40  # or postgres

The app is served as `ragloom serve` serves it (guards, login, API) with login on, over
the State of the Union speech and the real embedding model. Its LLM is by default a
**stand-in**: an OpenAI-compatible endpoint on loopback that streams a fixed cited answer
at once (``ragloom_app.testing.openai_standin``), so that what is measured is the app (the
API, retrieval, the grounding check, the database, the answer slots), not the 2-core
model; ``--llm local`` uses the bundled model in the app process, ``--llm local-server``
the same model through ``python -m llama_cpp.server`` (as a vLLM or Ollama would serve it).

Each user has an account and an API key, and asks its questions one after another in a
conversation of its own (FullQA, one JSON answer each; each user its own questions of the
set's 74); meanwhile each of ``--uploaders`` other users uploads a small file into its own
index, again and again, until the askers are done, then follows each upload's job to its
end: the report gives how long the jobs waited in the queue and took from upload to
indexed. Bounded loops: every user asks exactly ``--questions`` questions, and the jobs
are followed for at most 300 s.

The baseline, in the same run: the same questions asked by one user alone, on the same
path; the ratio of the p50s shows what contention adds, apart from the machine's speed.
The crowd's first pass meets most passages for the first time, and the sentence focus
embeds every sentence of a passage it has not seen (``ragloom.embeddings.cache``): on
the speech's 45 chunks that is most of the pass's work. So the crowd then asks again
(``--again``, the default without ``--outage``): the same questions in lower case, in new
conversations, while the uploaders fill new indices. The model is uncased, so the same
passages come back with their sentences known, but each question is a new text, embedded
again: the steady state of a server whose documents' passages have been seen.
The clients (``_load_clients.py``) run in a process of their own, beside the server's, on
the same 2 cores. With the app in this process (no ``--processes``), the report also
gives the CPU time of an answer, in the app (its uploads' indexing included) and in the
clients: the machine's cores over that bound the answers a second, whatever the code does
about waiting, which tells a slow machine from slow code.
With ``--servers`` the app database (rows and full text) is a throwaway PostgreSQL cluster
and the vectors are on a ``chroma run`` server; with ``--processes N``, N ``ragloom
serve`` processes share them behind Debian's haproxy (each user's client kept on one
process by haproxy's cookie, the users spread round robin), and ``--workers`` ``ragloom
worker`` processes run the upload jobs; all on loopback, started by the tests' helpers.
The aim (issue 18): 16 users at p95 under 1 s for a FullQA answer, with 0 errors, with
the stand-in. With ``--outage``, a server is stopped and started again while the users
ask (``_outage.py``): the report says what they were told meanwhile, and how soon the app,
never restarted, answered again.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import logging
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _load_clients import Run, percentile, run_load, warm_up

# Nothing of the app is imported here at the top: the clients' process, started with
# ``spawn``, imports this module again (see _load_clients.py).
REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "sotu"
ANSWER = "The speech says so [1]."
ANSWER_TIMEOUT = 900.0  # seconds a client waits for an answer of the real model


def _llm(
    kind: str, users: int, stack: contextlib.ExitStack, workdir: Path
) -> dict[str, Any] | None:
    """The LLM of the run, its servers kept running by ``stack``: the stand-in, the bundled
    model through ``llama_cpp.server`` (``local-server``), or flowsettings.py's own in the
    app process (``local``: ``None``)."""
    if kind == "local":
        return None
    if kind == "standin":
        from ragloom_app.testing.openai_standin import fake_openai

        standin = stack.enter_context(fake_openai())
        standin.reply = ANSWER
        base_url, concurrent, timeout = standin.url, users, 120.0
    else:
        from ragloom.llms.bundled import bundled_model_path
        from tests.helpers.llama_server import llama_server

        # llama.cpp's server runs one request at a time; the others wait their turn.
        base_url = stack.enter_context(llama_server(bundled_model_path(), workdir))
        concurrent, timeout = 1, ANSWER_TIMEOUT
    return {
        "class": "ragloom.llms.openai_compat.OpenAIChat",
        "base_url": base_url,
        "model": kind,
        "server_kind": "openai" if kind == "standin" else "llama.cpp",
        "max_concurrent": concurrent,
        "timeout": timeout,
    }


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16, help="users asking at once")
    parser.add_argument("--questions", type=int, default=8, help="questions each user asks")
    parser.add_argument("--uploaders", type=int, default=2, help="users uploading meanwhile")
    parser.add_argument("--data", type=Path, default=DATA, help="the sotu data folder")
    parser.add_argument(
        "--servers",
        action="store_true",
        help="the app database and full text on a throwaway PostgreSQL, the vectors on a "
        "`chroma run`",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="N `ragloom serve` processes behind haproxy, uploads indexed by `ragloom worker` "
        "processes (implies --servers; 0: one app in this process)",
    )
    parser.add_argument("--workers", type=int, default=1, help="`ragloom worker` processes")
    parser.add_argument(
        "--outage",
        choices=["chroma", "postgres"],
        help="stop this server in the middle of the run and start it again (implies --servers)",
    )
    parser.add_argument(
        "--outage-at", type=float, default=3.0, help="seconds into the run the server stops"
    )
    parser.add_argument(
        "--outage-for", type=float, default=5.0, help="seconds it stays down before its restart"
    )
    parser.add_argument(
        "--llm",
        choices=["standin", "local", "local-server"],
        default="standin",
        help="the loopback stand-in (the app's own overhead), the bundled model in the app "
        "(local) or through llama_cpp.server (local-server)",
    )
    parser.add_argument(
        "--again",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the first pass, the crowd asks its questions again in lower case (passages "
        "seen, questions new); the default without --outage",
    )
    args = parser.parse_args()
    if args.again is None:
        args.again = args.outage is None
    args.servers = args.servers or args.processes > 0 or args.outage is not None
    return args


def main() -> None:
    sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]  # the tests' helpers start servers
    from _deployments import behind_haproxy, in_process, load_settings
    from _outage import outage_report, stop_and_start

    args = _arguments()
    logging.basicConfig(level=logging.WARNING)
    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        every = [row["question"] for row in csv.DictReader(handle)]
    # Each user asks questions of its own, in turn through the set (74 questions).
    questions = [
        [every[(user * args.questions + j) % len(every)] for j in range(args.questions)]
        for user in range(args.users)
    ]
    names = [f"asker{i}" for i in range(args.users)] + [
        f"uploader{i}" for i in range(args.uploaders)
    ]
    timeout = 120.0 if args.llm == "standin" else ANSWER_TIMEOUT
    workdir = Path(tempfile.mkdtemp(prefix="ragloom-load-bench-"))
    speech = args.data / "state_of_the_union.txt"
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)  # once every server stopped
        llm = _llm(args.llm, args.users, stack, workdir)
        servers, window = None, None
        if args.servers:
            from tests.helpers.chroma_server import chroma_server
            from tests.helpers.postgres import fresh_database, throwaway_postgres

            # Durable when it is to be stopped as in a crash: a cluster without fsync
            # loses transactions it said were committed, which no server in use does.
            cluster = stack.enter_context(throwaway_postgres(durable=args.outage == "postgres"))
            chroma = stack.enter_context(chroma_server())
            servers = (fresh_database(cluster), chroma.url)
        settings = load_settings(workdir / "data", llm, servers)
        if args.processes:
            deployed = behind_haproxy(
                settings, speech, names, workdir, args.processes, args.workers
            )
        else:
            deployed = in_process(settings, speech, names)
        deployment = stack.enter_context(deployed)
        for app_url in deployment.apps:
            warm_up(app_url, deployment.keys[0], timeout)
        # The clients run in a process of their own: in the server's, their work would
        # hold the interpreter's lock the server needs. So the app's CPU is this process's
        # (its main thread waits meanwhile): its clock is read before and after each pass.
        clock: list[float] = []
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            url, keys = deployment.url, deployment.keys
            clock.append(time.process_time())
            alone = pool.apply(run_load, (url, keys[:1], [], questions[:1], timeout))
            clock.append(time.process_time())
            running = pool.apply_async(
                run_load, (url, keys, names[args.users :], questions, timeout)
            )
            if args.outage:
                stopped = chroma if args.outage == "chroma" else cluster
                window = stop_and_start(stopped, args.outage_at, args.outage_for)
            crowd = running.get()
            clock.append(time.process_time())
            again = None
            if args.again:
                lowered = [[q.lower() for q in asked] for asked in questions]
                again = pool.apply(
                    run_load, (url, keys, names[args.users :], lowered, timeout, "notes again")
                )
                clock.append(time.process_time())
    app_cpu = None if args.processes else [b - a for a, b in itertools.pairwise(clock)]
    _report(args, alone, crowd, again, app_cpu)
    if window is not None:
        print("\n".join(outage_report(window, crowd.answers, crowd.errors)))


def _report(
    args: argparse.Namespace,
    alone: Run,
    crowd: Run,
    again: Run | None,
    app_cpu: list[float] | None,
) -> None:
    total = args.users * args.questions
    llm = {
        "standin": "the loopback stand-in (fixed text)",
        "local": "the bundled 0.5B model in the app process (llama.cpp)",
        "local-server": "the bundled 0.5B model through llama_cpp.server",
    }[args.llm]
    print(f"load: {args.users} users x {args.questions} FullQA questions ({total} answers),")
    print(f"  {args.uploaders} more users uploading meanwhile; LLM: {llm}")
    where = (
        "PostgreSQL (rows, full text) and a Chroma server"
        if args.servers
        else "SQLite and embedded Chroma"
    )
    if args.processes:
        where += (
            f"; {args.processes} `ragloom serve` processes behind haproxy, "
            f"{args.workers} `ragloom worker` (procrastinate)"
        )
    print(f"  stores: {where}")
    rows = [("1 user (baseline)", alone), (f"{args.users} users", crowd)]
    if again is not None:
        rows.append((f"{args.users} users again", again))
    for label, run in rows:
        print(
            f"  {label:24} p50 {percentile(run.latencies, 0.5) * 1000:7.0f} ms   "
            f"p95 {percentile(run.latencies, 0.95) * 1000:7.0f} ms   "
            f"errors {len(run.errors)}   "
            f"{len(run.latencies) / run.seconds:5.1f} answers/s"
        )
    for label, run in rows[1:]:
        waits, totals = run.job_waits, run.job_totals
        print(
            f"  {label}: {run.uploads} uploads taken meanwhile; their jobs' queue wait p50 "
            f"{percentile(waits, 0.5) * 1000:.0f} ms, p95 {percentile(waits, 0.95) * 1000:.0f} "
            f"ms; upload to indexed p50 {percentile(totals, 0.5) * 1000:.0f} ms, p95 "
            f"{percentile(totals, 0.95) * 1000:.0f} ms"
        )
    if app_cpu is not None:
        cores = os.cpu_count() or 1
        for (label, run), seconds in zip(rows, app_cpu, strict=True):
            answers = max(1, len(run.latencies))
            app_ms, client_ms = seconds / answers * 1000, run.client_cpu_seconds / answers * 1000
            uploads = " (its uploads' indexing included)" if run.uploads else ""
            print(
                f"  {label}: CPU per answer {app_ms:.0f} ms in the app{uploads}, "
                f"{client_ms:.0f} ms in the clients: {cores} cores allow at most "
                f"{cores / ((app_ms + client_ms) / 1000):.1f} answers/s"
            )
    ratio = statistics.median(crowd.latencies) / statistics.median(alone.latencies)
    print(f"  p50 ratio, {args.users} users over 1: {ratio:.2f}x")
    for label, run in rows[1:]:
        if args.llm == "standin":
            p95 = percentile(run.latencies, 0.95)
            verdict = "met" if p95 < 1.0 and not run.errors else "NOT met"
            print(f"  aim (p95 < 1 s, 0 errors), {label}: {verdict}")
        for error in run.errors[:5]:
            print(f"  error ({label}): {error}")


if __name__ == "__main__":
    main()
