"""Chunking time against input size: 1 MB and 10 MB, with and without whitespace.

The TokenSplitter (chunk_size 240, overlap 36, as the file index uses it) splits one page
of each text: a base64-like line (no whitespace, the model's tokenizer makes hundreds of
tokens of every kilobyte), one letter repeated (no whitespace, and a single unknown token
for the model however long), and prose (the State of the Union address repeated). Each
runs with the bundled embedding model's own token counter and with the approximate one.
The baseline is the 1 MB run of the same text and counter: chunking is linear when the
10 MB run takes about 10 times as long (it used to grow with the square of the length: a
200 kB base64 line took 73 s, so 10 MB would have taken days).

    .venv/bin/python benchmarks/chunking.py [--sizes 1 10] [--counters model approximate]
"""

from __future__ import annotations

import argparse
import base64
import logging
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "sotu"
MB = 1_000_000


def texts(prose_path: Path, size: int) -> dict[str, str]:
    """The three texts, ``size`` characters each."""
    rng = random.Random(size)
    run = base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode("ascii")[:size]
    prose = prose_path.read_text(encoding="utf-8")
    return {
        "base64 line": run,
        "one letter repeated": "a" * size,
        "prose (sotu repeated)": (prose * (size // len(prose) + 1))[:size],
    }


def counters(names: list[str]) -> dict[str, Callable[[str], int] | None]:
    """Token counters by name: the bundled model's, or ``None`` for the approximate count."""
    chosen: dict[str, Callable[[str], int] | None] = {}
    for name in names:
        if name == "model":
            from ragloom.embeddings import SentenceTransformerEmbeddings

            embeddings = SentenceTransformerEmbeddings()
            embeddings.count_tokens("load the model before timing")
            chosen[name] = embeddings.count_tokens
        else:
            chosen[name] = None
    return chosen


def chunk_seconds(text: str, counter: Callable[[str], int] | None) -> tuple[float, int, int]:
    """Seconds to chunk ``text`` as one page, the chunk count and the longest chunk."""
    from ragloom.schema import Page
    from ragloom.splitters import TokenSplitter

    splitter = TokenSplitter(chunk_size=240, chunk_overlap=36, tokenizer=counter)
    started = time.perf_counter()
    chunks = splitter([Page(text)], source_id="bench", source_name="bench.txt")
    seconds = time.perf_counter() - started
    return seconds, len(chunks), max(len(c.text) for c in chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10], help="MB, smallest first")
    parser.add_argument(
        "--counters", nargs="+", default=["model", "approximate"], choices=["model", "approximate"]
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the sotu text")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    prose_path = args.data / "state_of_the_union.txt"
    sizes = sorted(args.sizes)

    by_size = {size: texts(prose_path, size * MB) for size in sizes}
    chosen = counters(args.counters)
    print("TokenSplitter chunking time (chunk_size 240, overlap 36), one page per text")
    print(
        f"{'counter':<12}{'text':<24}{'size':>6}{'seconds':>10}{'chunks':>9}{'longest':>9}"
        f"{'ratio':>8}"
    )
    for counter_name, counter in chosen.items():
        for text_name in by_size[sizes[0]]:
            baseline = None
            for size in sizes:
                print(f"  {counter_name} {text_name} {size} MB ...", file=sys.stderr, flush=True)
                seconds, count, longest = chunk_seconds(by_size[size][text_name], counter)
                baseline = baseline or seconds
                ratio = f"{seconds / baseline:7.1f}x"
                print(
                    f"{counter_name:<12}{text_name:<24}{size:>4} MB{seconds:>10.2f}{count:>9}"
                    f"{longest:>9}{ratio:>8}",
                    flush=True,
                )
    print(
        f"ratio: seconds against the {sizes[0]} MB run of the same text and counter "
        f"(linear: about {sizes[-1] // sizes[0]}x for {sizes[-1]} MB)"
    )


if __name__ == "__main__":
    main()
