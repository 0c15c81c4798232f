"""Indexing throughput: chunks/s through the whole file pipeline against raw ``encode``.

The pipeline reads the files, splits them into chunks, embeds them and writes Chroma, BM25
and the app database. The baseline embeds the very same chunk texts with
``SentenceTransformer.encode`` directly (batch 32), measured in the same run, before and
after the pipeline (the machine is shared and noisy). Goal: ratio >= 0.9, i.e. the
embedding model is the only real cost.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from ragloom.embeddings.bundled import bundled_model_path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sotu"


def _corpus(data: Path, copies: int, folder: Path) -> list[Path]:
    text = (data / "state_of_the_union.txt").read_text(encoding="utf-8")
    files = []
    for n in range(copies):
        # A header makes each copy distinct content, so none is skipped as a duplicate.
        path = folder / f"speech-{n}.txt"
        path.write_text(f"Copy {n} of the address.\n\n{text}", encoding="utf-8")
        files.append(path)
    return files


def _raw_encode(texts: list[str]) -> float:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    model.encode(texts[:32], batch_size=32)  # warm up
    started = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--copies", type=int, default=2, help="copies of the speech to index")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from sqlmodel import Session, select

    from ragloom_app.app import BaseApp
    from ragloom_app.db.models import ChunkRecord
    from ragloom_app.settings import AppSettings

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = _corpus(args.data, args.copies, root)
        app = BaseApp(AppSettings(data_dir=root / "data")).start()
        index = app.indices.indices[0]
        app.embeddings().embed_documents(["warm up"])
        pipeline = index.get_indexing_pipeline({})

        # The baseline needs the chunk texts: split once, outside any timing.
        splitter = pipeline.ingestor.splitter
        from ragloom.loaders import read_file

        texts = [c.text for f in files for c in splitter(read_file(f), "s", f.name)]
        raw_before = _raw_encode(texts)

        started = time.perf_counter()
        outcomes = pipeline.run(files)
        elapsed = time.perf_counter() - started
        assert all(o.status == "indexed" for o in outcomes), outcomes
        with Session(app.engine) as session:
            chunks = len(session.exec(select(ChunkRecord)).all())
        raw_after = _raw_encode(texts)

    raw = statistics.mean([raw_before, raw_after])
    through = chunks / elapsed
    print(f"Indexing throughput ({len(files)} files, {chunks} chunks of <= 200 tokens)")
    print(
        f"  raw SentenceTransformer.encode  {raw:8.1f} chunks/s "
        f"(before {raw_before:.1f}, after {raw_after:.1f})"
    )
    print(f"  through the indexing pipeline   {through:8.1f} chunks/s")
    print(f"  ratio pipeline / raw            {through / raw:8.2f} (goal >= 0.9)")


if __name__ == "__main__":
    main()
