"""Every reasoning mode on the State of the Union set: accuracy, tokens, calls, seconds.

    .venv/bin/python benchmarks/reasoning.py                       # all 74 questions
    .venv/bin/python benchmarks/reasoning.py --limit 10 --modes rewoo,react
    RAGLOOM_OPENAI_BASE_URL=http://host:8000/v1 \
        .venv/bin/python benchmarks/reasoning.py --llm openai
    RAGLOOM_OPENAI_NATIVE_TOOLS=1 RAGLOOM_OPENAI_BASE_URL=... \
        .venv/bin/python benchmarks/reasoning.py --llm openai --modes react   # tool calling

The speech is indexed once into a throwaway app (the default FileIndex: hybrid search,
240-token chunks); then each question is put to every mode in turn through
``ChatPage.ask``, exactly as the UI and ``ragloom ask`` do. Questions lose their
"Based on State of the Union Address 2023:" prefix (every question has it).

- accuracy: an answer counts as correct when it holds at least half of the gold answer's
  content words (lowercased ``\\w+`` tokens minus NLTK's English stopwords), the rule the
  kotaemon figures in the issue were measured with;
- tokens: prompt plus completion tokens over every LLM call of the question (tokens a
  llama.cpp cache spared are still counted: the rule of the ReWOO paper); a server that
  reports no usage (llama-cpp-python's) gets Ragloom's count (``OpenAIChat.stream``);
- s/q and p50 s: mean and median wall time of a question (the median shrugs off the
  questions slowed by other work on a shared machine);
- searched: the share of questions on which the documents were searched;
- crashed: questions whose mode raised (the app turns that into an error step);
- plans parsed: for ReWOO, the share of first plans that validated without repair.

One line per question goes to ``--out`` (JSON lines), so a long run can be inspected and
an interrupted one still says something.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    add_mode_settings_option,
    ask_record,
    bench_settings,
    chosen_modes,
    mode_settings_of,
)
from bm25s.stopwords import STOPWORDS_EN_PLUS

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.pages.chat import ChatPage

DEFAULT_DATA = REPO.parent / "shared" / "data" / "sotu"
PREFIX = re.compile(r"^\s*Based on State of the Union Address 2023:\s*", re.IGNORECASE)
STOPWORDS = frozenset(STOPWORDS_EN_PLUS)
MODES = ("fullqa", "decompose", "react", "rewoo", "auto")


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS}


def is_correct(answer: str, gold: str) -> bool:
    """At least half of the gold answer's content words are in the answer."""
    wanted = content_words(gold)
    return bool(wanted) and len(wanted & content_words(answer)) >= 0.5 * len(wanted)


def searched(record: dict[str, Any]) -> bool:
    """Whether the documents were searched (a docsearch call, or retrieval of a mode)."""
    for step in record["steps"]:
        name = str(step.get("step", ""))
        search = name.endswith(":docsearch") or name == "retrieve" or re.fullmatch(r"Q\d+", name)
        if search and step.get("event") == "finished" and not step.get("error"):
            return True
    return False


def summarize(mode: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    summary = {
        "mode": mode,
        "questions": n,
        "accuracy": 100.0 * sum(r["correct"] for r in rows) / n,
        "tokens": statistics.mean(r["tokens"] for r in rows),
        "calls": statistics.mean(r["llm_calls"] for r in rows),
        "seconds": statistics.mean(r["seconds"] for r in rows),
        "seconds_p50": statistics.median(r["seconds"] for r in rows),
        "searched": 100.0 * sum(r["searched"] for r in rows) / n,
        "crashed": sum(r["crashed"] for r in rows),
        "plans_parsed": None,
    }
    plans = [r["plan_repaired"] for r in rows if r["plan_repaired"] is not None]
    if plans:
        summary["plans_parsed"] = 100.0 * sum(not p for p in plans) / len(plans)
    return summary


def print_table(summaries: list[dict[str, Any]], llm: str) -> None:
    print(f"\nReasoning modes on the State of the Union set, LLM {llm!r}")
    header = (
        f"{'mode':<10} {'n':>3} {'accuracy':>9} {'tokens/q':>9} {'calls/q':>8} "
        f"{'s/q':>6} {'p50 s':>6} {'searched':>9} {'crashed':>8} {'plans parsed':>13}"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        plans = "" if s["plans_parsed"] is None else f"{s['plans_parsed']:.1f}%"
        print(
            f"{s['mode']:<10} {s['questions']:>3} {s['accuracy']:>8.1f}% {s['tokens']:>9.0f} "
            f"{s['calls']:>8.2f} {s['seconds']:>6.1f} {s['seconds_p50']:>6.1f} "
            f"{s['searched']:>8.1f}% {s['crashed']:>8} {plans:>13}"
        )
    by_mode = {s["mode"]: s for s in summaries}
    if "react" in by_mode and "rewoo" in by_mode and by_mode["rewoo"]["tokens"]:
        ratio = by_mode["react"]["tokens"] / by_mode["rewoo"]["tokens"]
        print(f"\nReAct tokens / ReWOO tokens per question: {ratio:.2f}x (goal >= 5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--offset", type=int, default=0, help="skip the first N questions")
    parser.add_argument(
        "--questions", default=None, help="only these question numbers, comma-separated (1-74)"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="modes, comma-separated")
    parser.add_argument("--llm", default=None, help="a name in LLMS (default: DEFAULT_LLM)")
    parser.add_argument("--out", type=Path, default=None, help="JSON lines, one per answer")
    add_mode_settings_option(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        questions = [
            (PREFIX.sub("", r["question"]).strip(), r["answer"]) for r in csv.DictReader(handle)
        ]
    numbered = list(enumerate(questions, 1))[args.offset :]
    if args.questions:
        wanted = {int(n) for n in args.questions.split(",")}
        numbered = [(n, q) for n, q in numbered if n in wanted]
    numbered = numbered[: args.limit] if args.limit else numbered
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    mode_settings = mode_settings_of(args)

    with tempfile.TemporaryDirectory(prefix="ragloom-reasoning-bench-") as tmp:
        workdir = Path(tmp)
        app = BaseApp(bench_settings(workdir / "data", "sotu", args.llm)).start()
        index = app.indices.get("sotu")
        outcomes = [
            e
            for e in index.get_indexing_pipeline({}).stream([args.data / "state_of_the_union.txt"])
            if isinstance(e, FileOutcome)
        ]
        print(f"indexed: {[(o.name, o.status, o.chunks) for o in outcomes]}", file=sys.stderr)
        page = ChatPage(app)
        out = args.out.open("w", encoding="utf-8") if args.out else None
        rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        started = time.perf_counter()
        for number, (question, gold) in numbered:
            for mode in modes:
                record = ask_record(page, question, mode, mode_settings)
                usage = record["usage"]
                plan = [s for s in record["steps"] if s.get("event") == "plan" and "repaired" in s]
                row = {
                    "question": number,
                    "mode": mode,
                    "correct": is_correct(record["answer"], gold),
                    "tokens": usage["prompt_tokens"] + usage["completion_tokens"],
                    "llm_calls": usage["llm_calls"],
                    "seconds": usage["seconds"],
                    "searched": searched(record),
                    "crashed": any(s.get("step") == "error" for s in record["steps"]),
                    "plan_repaired": plan[0]["repaired"] if mode == "rewoo" and plan else None,
                    "modes": chosen_modes(record),
                    "grounding": (record.get("grounding") or {}).get("status"),
                    "answer": record["answer"],
                    "gold": gold,
                }
                if mode == "rewoo" and not plan:
                    row["plan_repaired"] = True  # no runnable plan at all counts as not parsed
                rows[mode].append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            elapsed = time.perf_counter() - started
            print(f"[{number}/{len(questions)}] {elapsed:.0f} s", file=sys.stderr, flush=True)
        print_table([summarize(m, rows[m]) for m in modes if rows[m]], app.llm().name)


if __name__ == "__main__":
    main()
