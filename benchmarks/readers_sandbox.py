"""What reading and chunking a file in the readers sandbox costs, against doing it here.

Every file of an upload is read and chunked in a worker process (ragloom.chunking): the
job and the chunks are pickled both ways, the tokenizer is sent with every job. This
times the same files both ways with the bundled model's tokenizer, after warming the
sandbox (its start, about a second, is paid once per process), and prints the ratio:

- small: Markdown notes of a few hundred words (the per-file overhead dominates);
- a PDF of 200 pages of text (the reading and chunking dominate).

    .venv/bin/python benchmarks/readers_sandbox.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ragloom.chunking import chunk_in_sandbox, split_within_budget, warm_readers_sandbox
from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.loaders import default_readers, read_file
from ragloom.splitters import TokenSplitter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.pdfs import make_pdf

VOCABULARY = (
    "the harbour pumps move seawater uphill at night while the quay crew logs the hours "
    "each valve was replaced in spring and the cooling loop is flushed every ninety days"
)


def _prose(rng: random.Random, words: int) -> str:
    vocabulary = VOCABULARY.split()
    sentences = []
    while words > 0:
        length = rng.randint(8, 20)
        sentences.append(" ".join(rng.choice(vocabulary) for _ in range(length)).capitalize() + ".")
        words -= length
    return " ".join(sentences)


def _files(folder: Path) -> dict[str, list[Path]]:
    rng = random.Random(7)
    notes = []
    for number in range(20):
        path = folder / f"note{number}.md"
        path.write_text("\n\n".join(_prose(rng, 120) for _ in range(3)))
        notes.append(path)
    pdf = folder / "manual.pdf"
    pdf.write_bytes(make_pdf(["\n".join(_prose(rng, 14) for _ in range(40)) for _ in range(200)]))
    return {"small (20 notes)": notes, "pdf (200 pages)": [pdf]}


def _time(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    counter = SentenceTransformerEmbeddings().token_counter()
    splitter = TokenSplitter(chunk_size=240, chunk_overlap=36, tokenizer=counter)
    readers = default_readers()
    warm_readers_sandbox()
    with tempfile.TemporaryDirectory() as folder:
        for name, paths in _files(Path(folder)).items():

            def here(paths: list[Path] = paths) -> None:
                for path in paths:
                    split_within_budget(read_file(path, readers), splitter, "s", "n", 50_000)

            def sandboxed(paths: list[Path] = paths) -> None:
                for path in paths:
                    chunk_in_sandbox(path, readers, splitter, "s", "n")

            here()  # the tokenizer is built in this process once
            sandboxed()
            direct, boxed = [], []
            for _ in range(args.rounds):
                direct.append(_time(here))
                boxed.append(_time(sandboxed))
            d, b = statistics.median(direct), statistics.median(boxed)
            per_file = (b - d) / len(paths) * 1000
            print(
                f"{name}: in-process {d * 1000:.0f} ms, sandboxed {b * 1000:.0f} ms, "
                f"ratio {b / d:.2f}, {per_file:+.0f} ms per file"
            )


if __name__ == "__main__":
    main()
