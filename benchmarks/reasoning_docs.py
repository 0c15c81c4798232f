"""Every reasoning mode on the SQLite documentation set: accuracy per kind, declines,
unsupported answers, tokens, seconds.

    .venv/bin/python benchmarks/reasoning_docs.py --modes fullqa          # 40 questions
    .venv/bin/python benchmarks/reasoning_docs.py --kinds calc,multi --modes rewoo,decompose
    .venv/bin/python benchmarks/reasoning_docs.py --ids s01,n03 --set focus_sentences=0
    .venv/bin/python benchmarks/reasoning_docs.py --fresh                 # re-index first

The set is ``../shared/data/sqlite-docs`` (``--data``): 40 questions (``qa.jsonl``) over
SQLite's HTML manual as Debian's ``sqlite3-doc`` installs it (``--root``, 766 pages). Every
``*.html`` under the root is indexed, recursively, into one default FileIndex of a throwaway
app with the embedded model. Indexing takes about ten minutes, so the app's data folder is
kept under ``--cache`` (default ``~/.cache/ragloom/bench``) in a folder named by a key over
the index settings, the embedding model, the readers' and chunkers' source code and the
pages; ``--fresh`` rebuilds it. Each run adds its conversations to that folder's database.

Each question goes to every mode through ``ChatPage.ask``, as the UI and ``ragloom ask``
do. Columns:

- single, multi, calc, negative, all: accuracy by ``score.py``'s own rule (imported from
  the data folder, never copied): the gold answer or an alias on token boundaries of the
  normalised answer; a negative is right when the answer declines;
- declined: the share of the near misses (``negative``) declined, and ``false decl.`` the
  questions with an answer in the documents that the mode declined;
- unsupp.: answers that do not decline yet state a number or identifier that occurs
  neither in the passages they cite nor in the question (:func:`unsupported_specifics`,
  a check independent of the app's; an answer citing nothing counts when it states any);
- passed: of those, the ones the app's grounding check let pass as ``supported`` (no
  sentence marked): the answers presented as supported that are not. Issue 16 wants 0;
- tokens/q, s/q, p50 s: prompt plus completion tokens of every LLM call, and the mean and
  median wall time of a question (as ``reasoning.py`` counts them);
- crashed: questions whose mode raised.

For ``auto``, each row also says which modes answered (``modes``: the first, and the
second when it tried again), and the table is followed by how often each route and
escalation was taken.

``--out`` gets one JSON line per answer as it comes (an interrupted run still says
something; ``--table FILE...`` prints the table of such files, runs split by kind
merged); ``--answers DIR`` gets one ``{"id", "answer"}`` file per mode that ``score.py``
reads (``python3 score.py DIR/fullqa.jsonl --details``), so anyone can re-score.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from _common import (
    REPO,
    add_mode_settings_option,
    ask_record,
    bench_settings,
    chosen_modes,
    mode_settings_of,
)
from reasoning import searched

import ragloom
from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file import FileIndex
from ragloom_app.pages.chat import ChatPage

logger = logging.getLogger(__name__)

# ../shared beside the checkout, or beside the folder of worktrees holding it.
DEFAULT_DATA = next(
    (d for d in (p / "shared" / "data" / "sqlite-docs" for p in REPO.parents[:2]) if d.is_dir()),
    REPO.parent / "shared" / "data" / "sqlite-docs",
)
DEFAULT_ROOT = Path("/usr/share/doc/sqlite3")
DEFAULT_CACHE = Path.home() / ".cache" / "ragloom" / "bench"
INDEX_NAME = "sqlite-docs"
KINDS = ("single", "multi", "calc", "negative")
# Written last into a cached data folder: a folder without it is an interrupted build.
COMPLETE_MARKER = "complete.json"
# Code whose change makes different chunks, so a different cache key.
CHUNKING_CODE = ("loaders", "splitters", "chunking.py", "indexing.py", "embeddings")

# The specifics of an answer: numbers (3.40.0, 4,120,032, 1.2, 66%) and identifiers
# (sqlite3_randomness, SQLITE_SCHEMA, xRandomness, carray(), lost_and_found, FTS5).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z]+_\w+|[a-z]+[A-Z]\w*|[A-Z]{2,}\d*[A-Z\d]*|[A-Za-z]\w*\d\w*)\b|\b\w+(?=\(\))"
)


def load_score_module(data: Path) -> ModuleType:
    """``score.py`` of the data folder, imported from there (its folder put on sys.path)."""
    if str(data) not in sys.path:
        sys.path.insert(0, str(data))
    import score  # only importable once its folder is on the path

    return score


def specifics(text: str) -> set[str]:
    """The numbers and identifiers ``text`` states, as written (citation marks dropped)."""
    text = re.sub(r"\[\d+(?:\s*,\s*\d+)*\]", " ", text)
    found = {m.group(0).rstrip(".,") for m in _NUMBER.finditer(text)}
    found |= {m.group(0) for m in _IDENTIFIER.finditer(text)}
    return {s for s in found if s}


def _unglued(text: str) -> str:
    """``text`` with a number and the letters glued to it apart: ``500kb`` reads ``500 kb``."""
    return re.sub(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)", " ", text)


def unsupported_specifics(
    answer: str, cited_texts: Iterable[str], question: str, normalise: Callable[[str], str]
) -> list[str]:
    """The specifics of ``answer`` found neither in ``cited_texts`` nor in ``question``.

    Compared after ``normalise`` (score.py's: case, thousands separators and punctuation
    do not count) on token boundaries, so ``4,120,032`` is supported by ``4120032`` and
    ``SQLITE_SCHEMA`` by ``sqlite_schema``. A stand-in for the app's grounding check.
    """
    # A number glued to its unit ("500KB") is the number too: the unit is not checked.
    haystack = " " + " ".join(_unglued(normalise(t)) for t in [question, *cited_texts]) + " "
    missing = []
    for item in sorted(specifics(answer)):
        needle = _unglued(normalise(item))
        if needle and f" {needle} " not in haystack:
            missing.append(item)
    return missing


def corpus_files(root: Path) -> list[Path]:
    """Every ``*.html`` under ``root``, recursively, in a stable order."""
    return sorted(root.rglob("*.html"))


def cache_key(
    index_config: Mapping[str, Any], embedding: Mapping[str, Any], pages: list[Path]
) -> str:
    """A short hash of what makes the indexed data: settings, model, chunking code, pages."""
    digest = hashlib.sha256()
    digest.update(json.dumps([index_config, embedding], sort_keys=True, default=str).encode())
    package = Path(ragloom.__file__).parent
    for name in CHUNKING_CODE:
        target = package / name
        for source in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            digest.update(source.read_bytes())
    for page in pages:
        digest.update(f"{page}:{page.stat().st_size}:{page.stat().st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def indexed_app(
    root: Path, cache: Path, fresh: bool, llm: str | None
) -> tuple[BaseApp, dict[str, Any]]:
    """The app over the whole manual, indexed now or taken from the cache; and what
    indexing recorded (seconds, files per outcome, chunks)."""
    pages = corpus_files(root)
    if not pages:
        raise SystemExit(f"no *.html under {root}: apt-get install -y sqlite3-doc")
    probe = bench_settings(cache / "probe", INDEX_NAME, llm)
    embedding = probe.embeddings[probe.default_embedding]
    key = cache_key(FileIndex.normalize_config({}), embedding, pages)
    data_dir = cache / f"sqlite-docs-{key}"
    marker = data_dir / COMPLETE_MARKER
    if data_dir.exists() and (fresh or not marker.exists()):
        shutil.rmtree(data_dir)
    app = BaseApp(bench_settings(data_dir, INDEX_NAME, llm)).start()
    if marker.exists():
        built = json.loads(marker.read_text(encoding="utf-8"))
        print(f"index: cached {data_dir} (built in {built['seconds']:.0f} s)", file=sys.stderr)
        return app, built
    index = app.indices.get(INDEX_NAME)
    names = [str(p.relative_to(root)) for p in pages]
    started = time.perf_counter()
    outcomes: list[FileOutcome] = []
    for event in index.get_indexing_pipeline({}).stream(pages, names=names):
        if isinstance(event, FileOutcome):
            outcomes.append(event)
            if len(outcomes) % 50 == 0:
                print(f"indexed {len(outcomes)}/{len(pages)} pages", file=sys.stderr, flush=True)
    statuses: dict[str, int] = {}
    for outcome in outcomes:
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
    built = {
        "key": key,
        "seconds": time.perf_counter() - started,
        "pages": len(pages),
        "statuses": statuses,
        "chunks": sum(o.chunks for o in outcomes if o.status == "indexed"),
        "failed": {o.name: o.reason for o in outcomes if o.status == "failed"},
    }
    marker.write_text(json.dumps(built, indent=1), encoding="utf-8")
    print(f"index: built {data_dir} in {built['seconds']:.0f} s", file=sys.stderr)
    return app, built


def answer_row(
    page: ChatPage,
    item: Mapping[str, Any],
    mode: str,
    settings: Mapping[str, int | str],
    score: ModuleType,
) -> dict[str, Any]:
    """One question put to one mode, scored."""
    record = ask_record(page, item["question"], mode, settings)
    answer, usage = record["answer"], record["usage"]
    normalised = score.normalise(answer)
    declined = any(score.contains(normalised, p) for p in score._DECLINE)
    cited = [c["text"] for c in record["citations"]]
    missing = (
        [] if declined else unsupported_specifics(answer, cited, item["question"], score.normalise)
    )
    grounding = record.get("grounding") or {}
    chosen = chosen_modes(record)
    return {
        "id": item["id"],
        "kind": item["kind"],
        "mode": mode,
        "correct": score.is_correct(item, answer),
        "declined": declined,
        "unsupported": missing,
        "grounding": grounding.get("status"),
        "passed_unsupported": bool(missing) and grounding.get("status") == "supported",
        "modes": chosen,
        "cited": sorted({c["source"] for c in record["citations"]}),
        "tokens": usage["prompt_tokens"] + usage["completion_tokens"],
        "llm_calls": usage["llm_calls"],
        "seconds": usage["seconds"],
        "searched": searched(record),
        "crashed": any(s.get("step") == "error" for s in record["steps"]),
        "answer": answer,
        "gold": item["answer"],
    }


def percent(rows: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> str:
    """``test``'s share of ``rows`` as ``k/n``, or ``-`` for none."""
    return f"{sum(map(test, rows))}/{len(rows)}" if rows else "-"


def summary_line(mode: str, rows: list[dict[str, Any]]) -> str:
    """One mode's row of the table."""
    by_kind = {k: [r for r in rows if r["kind"] == k] for k in KINDS}
    answerable = [r for r in rows if r["kind"] != "negative"]
    cells = [percent(by_kind[k], lambda r: r["correct"]) for k in KINDS]
    cells.append(percent(rows, lambda r: r["correct"]))
    cells.append(percent(by_kind["negative"], lambda r: r["declined"]))
    cells.append(percent(answerable, lambda r: r["declined"]))
    cells.append(percent(rows, lambda r: bool(r["unsupported"])))
    cells.append(percent(rows, lambda r: bool(r.get("passed_unsupported"))))
    tokens = statistics.mean(r["tokens"] for r in rows)
    seconds = [r["seconds"] for r in rows]
    crashed = sum(r["crashed"] for r in rows)
    return (
        f"{mode:<10} "
        + " ".join(f"{c:>9}" for c in cells)
        + f" {tokens:>9.0f} {statistics.mean(seconds):>6.1f} {statistics.median(seconds):>6.1f}"
        + f" {crashed:>8}"
    )


def print_table(rows: dict[str, list[dict[str, Any]]], title: str) -> None:
    """The per-mode table under ``title``, each cell ``right/asked``."""
    print(f"\n{title}")
    names = [*KINDS, "all", "declined", "false decl", "unsupp.", "passed"]
    header = (
        f"{'mode':<10} "
        + " ".join(f"{n:>9}" for n in names)
        + f" {'tokens/q':>9} {'s/q':>6} {'p50 s':>6} {'crashed':>8}"
    )
    print(header)
    print("-" * len(header))
    for mode, mode_rows in rows.items():
        if mode_rows:
            print(summary_line(mode, mode_rows))
    for mode, mode_rows in rows.items():
        routes: dict[str, int] = {}
        for row in mode_rows:
            if row.get("modes"):
                taken = f"{row['kind']} -> {' -> '.join(row['modes'])}"
                routes[taken] = routes.get(taken, 0) + 1
        if routes:
            print(f"\n{mode}: " + "; ".join(f"{k}: {n}" for k, n in sorted(routes.items())))


def select_items(items: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The questions ``--ids``, ``--kinds`` and ``--limit`` choose, in the set's order."""
    if args.ids:
        wanted = {i.strip() for i in args.ids.split(",")}
        unknown = wanted - {i["id"] for i in items}
        if unknown:
            raise SystemExit(f"unknown ids: {', '.join(sorted(unknown))}")
        items = [i for i in items if i["id"] in wanted]
    if args.kinds:
        kinds = {k.strip() for k in args.kinds.split(",")}
        if kinds - set(KINDS):
            raise SystemExit(f"kinds are {', '.join(KINDS)}")
        items = [i for i in items if i["kind"] in kinds]
    return items[: args.limit] if args.limit else items


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sqlite-docs set")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the HTML manual")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="indexed data folders")
    parser.add_argument("--fresh", action="store_true", help="re-index even if cached")
    parser.add_argument("--modes", default=None, help="comma-separated (default: every mode)")
    parser.add_argument("--kinds", default=None, help="comma-separated: " + ",".join(KINDS))
    parser.add_argument("--ids", default=None, help="comma-separated question ids")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--llm", default=None, help="a name in LLMS (default: DEFAULT_LLM)")
    parser.add_argument("--out", type=Path, default=None, help="JSON lines, one per answer")
    parser.add_argument("--answers", type=Path, default=None, help="folder of score.py files")
    parser.add_argument(
        "--table", type=Path, nargs="+", default=None, help="only print the table of --out files"
    )
    add_mode_settings_option(parser)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.table:
        table_of_rows(args.table)
        return
    if not (args.data / "qa.jsonl").is_file():
        print(f"skipped: no qa.jsonl in {args.data} (--data)", file=sys.stderr)
        return
    score = load_score_module(args.data)
    items = select_items(score.load_jsonl(args.data / "qa.jsonl"), args)
    mode_settings = mode_settings_of(args)
    app, built = indexed_app(args.root, args.cache, args.fresh, args.llm)
    modes = [m.strip() for m in args.modes.split(",")] if args.modes else list(app.reasonings)
    page = ChatPage(app)
    out = args.out.open("w", encoding="utf-8") if args.out else None
    answers = {}
    if args.answers:
        args.answers.mkdir(parents=True, exist_ok=True)
        answers = {m: (args.answers / f"{m}.jsonl").open("w", encoding="utf-8") for m in modes}
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    started = time.perf_counter()
    for number, item in enumerate(items, 1):
        for mode in modes:
            row = answer_row(page, item, mode, mode_settings, score)
            rows[mode].append(row)
            for handle, line in (
                (out, row),
                (answers.get(mode), {"id": row["id"], "answer": row["answer"]}),
            ):
                if handle:
                    handle.write(json.dumps(line) + "\n")
                    handle.flush()
        elapsed = time.perf_counter() - started
        print(f"[{number}/{len(items)}] {item['id']} {elapsed:.0f} s", file=sys.stderr, flush=True)
    print_table(
        rows,
        f"Reasoning modes on the SQLite documentation set, LLM {app.llm().name!r}; index: "
        f"{built['pages']} pages, {built['chunks']} chunks, built in {built['seconds']:.0f} s",
    )


def table_of_rows(paths: list[Path]) -> None:
    """The table of answers saved by earlier runs' ``--out`` (a mode's rows may be split
    over several files; the last row of a question wins)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.setdefault(row["mode"], {})[row["id"]] = row
    print_table({m: list(r.values()) for m, r in rows.items()}, f"From {len(paths)} rows files")


if __name__ == "__main__":
    main()
