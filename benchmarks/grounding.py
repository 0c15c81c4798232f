"""What the after-answer grounding check costs, against what citing the answer costs.

Every built-in mode's answer is checked against the passages it cites
(``ragloom.qa.grounding.ground_answer``) after its citations are mapped
(``ragloom.qa.citations``: ``attribute_uncited`` and ``citations_for``), in the same
request, with no LLM call. This prints, for answers of the lengths the modes write (and a
long one past the check's limits) over passages of the size the file index makes, the
time of the citation step, the time of the check, their ratio, and the check against the
answer's generation at 20 tokens a second (the bundled model on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from ragloom.qa.citations import EvidenceBlock, attribute_uncited, citations_for
from ragloom.qa.grounding import check_grounding
from ragloom.schema import Chunk, RetrievedChunk

PASSAGE = (
    "SQLite does not support joins containing more than 64 tables. The maximum number of "
    "bytes in a string or BLOB is defined by SQLITE_MAX_LENGTH, 1,000,000,000 by default. "
    "PRAGMA journal_mode=WAL enables write-ahead logging (version 3.7.0). Call "
    "sqlite3_open_v2() with SQLITE_OPEN_READONLY to open it read-only; the default page "
    "size is 4096 bytes and the automatic checkpoint threshold 1000 pages. "
)
SENTENCE = (
    "A join holds at most 64 tables and a string 1000000000 bytes (SQLITE_MAX_LENGTH) [1]. "
    "The checkpoint runs after 2000 pages with PRAGMA journal_mode set to WAL [2]. "
)
TOKENS_PER_SECOND = 20.0


def _evidence(count: int) -> EvidenceBlock:
    # About 1,000 characters a chunk, as the file index's 240-token chunks are.
    items = [
        RetrievedChunk(Chunk(f"c{n}", PASSAGE * 2, "s", f"page{n}.html"), 1.0 / n)
        for n in range(1, count + 1)
    ]
    return EvidenceBlock(text="", items=items)


def _best(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, nargs="+", default=[2, 4, 12, 200])
    parser.add_argument("--passages", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    evidence = _evidence(args.passages)
    print(f"{'sentences':>9} {'citing':>10} {'checking':>10} {'ratio':>6} {'vs generation':>14}")
    for count in args.sentences:
        answer = SENTENCE * (count // 2)
        citations = citations_for(answer, evidence)
        passages = {c.number: c.text for c in citations}

        def cite(answer: str = answer) -> object:
            return citations_for(attribute_uncited(answer, evidence), evidence)

        def check(answer: str = answer, passages: dict[int, str] = passages) -> object:
            return check_grounding(answer, passages, "How many tables may a join hold?")

        citing, checking = _best(cite, args.repeats), _best(check, args.repeats)
        generation = len(answer.split()) * 1.3 / TOKENS_PER_SECOND
        print(
            f"{count:>9} {citing * 1000:>7.2f} ms {checking * 1000:>7.2f} ms "
            f"{checking / citing:>5.1f}x {checking / generation:>13.2%}"
        )


if __name__ == "__main__":
    main()
