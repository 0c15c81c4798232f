"""Incremental BM25: adds, deletes, merges and other processes give exactly the scores of a
store built at once (and of bm25s itself)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store, tokenize
from tests.helpers.bm25_testkit import CORPUS, LoadCounter, chunk, ids_of

# --- tokenizer ------------------------------------------------------------------------------


WORDS = [
    *("cat", "dog", "tree", "revenue", "cloud", "tax", "invoice", "report", "market"),
    *("growth", "energy", "policy", "union", "budget", "school", "health", "border"),
    *("climate", "chips", "science", "bridge", "road", "water", "price", "job"),
]
CJK_WORDS = ["向量", "数据库", "天气", "東京", "検索", "公园"]


def random_corpus(n: int, seed: int, prefix: str = "d") -> list[Chunk]:
    """Chunks of 3 to 40 words drawn with skew, so terms repeat, scores tie and vary."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    chunks = []
    for i in range(n):
        words = rng.choices(WORDS, weights=weights, k=rng.randint(3, 40))
        if rng.random() < 0.15:
            words.append("".join(rng.sample(CJK_WORDS, 2)))
        chunks.append(chunk(f"{prefix}{i:04d}", " ".join(words), f"src-{i % 7}"))
    return chunks


QUERIES = [
    "cat",
    "cat dog",
    "cloud revenue tax",
    "chips science bridge",
    "job job price",  # a repeated term counts once
    "the energy of the union",
    "向量数据库",
    "東京の天気",
    "zebra",
]


def results(store: BM25Store, sources: list[str] | None = None) -> list[list[tuple[str, float]]]:
    """Every query's full ranking: ids and scores."""
    return [[(c.id, s) for c, s in store.query(q, k=1000, source_ids=sources)] for q in QUERIES]


def fresh_store(path: Path, chunks: list[Chunk]) -> BM25Store:
    store = BM25Store(path)
    store.add(chunks)
    return store


def test_incremental_adds_score_exactly_as_a_store_built_at_once(tmp_path: Path) -> None:
    corpus = random_corpus(300, seed=1)
    grown = BM25Store(tmp_path / "grown")
    grown.add(corpus[:10])
    grown.query("cat", k=1)  # loaded now: later adds go into the index in memory
    first = 10
    for size in (1, 2, 5, 40, 3, 90, 1, 1, 60, 20, 67):
        grown.add(corpus[first : first + size])
        first += size
    assert first == len(corpus)
    assert len(grown._index.segment_sizes()) < 12  # merged along the way

    at_once = fresh_store(tmp_path / "at-once", corpus)
    assert results(grown) == results(at_once)  # same ids, same order, equal scores
    assert results(grown, ["src-1", "src-4"]) == results(at_once, ["src-1", "src-4"])
    assert all(results(grown)[:-1])  # every query but "zebra" finds something


def test_scores_equal_bm25s(tmp_path: Path) -> None:
    import bm25s

    corpus = random_corpus(120, seed=2)
    store = BM25Store(tmp_path / "grown")
    for first in range(0, len(corpus), 25):  # built in steps, compared with one bm25s index
        store.add(corpus[first : first + 25])
        store.query("cat", k=1)
    reference = bm25s.BM25()  # the defaults the store promises: lucene, k1=1.5, b=0.75
    reference.index([tokenize(c.text) for c in corpus], show_progress=False)
    for query in QUERIES:
        terms = list(dict.fromkeys(tokenize(query)))
        scores = reference.get_scores(terms) if terms else []
        expected = sorted(
            ((c.id, float(s)) for c, s in zip(corpus, scores, strict=True) if s > 0),
            key=lambda hit: (-hit[1], hit[0]),
        )
        got = [(c.id, s) for c, s in store.query(query, k=1000)]
        assert [i for i, _ in got] == [i for i, _ in expected], query
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-6, abs=0)


def test_deletes_upserts_then_adds_match_a_fresh_store(tmp_path: Path) -> None:
    corpus = random_corpus(200, seed=3)
    store = fresh_store(tmp_path / "changed", corpus)
    store.query("cat", k=1)
    store.delete([c.id for c in corpus[::3]])
    store.delete_source("src-2")
    # Upserts: new text, and a move to another source.
    replaced = [chunk(c.id, f"giraffe {c.text}", "src-9") for c in corpus[1:40:4]]
    store.add(replaced)
    added = random_corpus(30, seed=4, prefix="new")
    store.add(added)
    store.delete(["new0003", "never-there"])

    live = {c.id: c for c in corpus if c.id not in {x.id for x in corpus[::3]}}
    live = {i: c for i, c in live.items() if c.source_id != "src-2"}
    live.update({c.id: c for c in replaced})
    live.update({c.id: c for c in added if c.id != "new0003"})
    assert store.ids() == set(live)
    fresh = fresh_store(tmp_path / "fresh", list(live.values()))
    assert results(store) == results(fresh)
    assert results(store, ["src-9"]) == results(fresh, ["src-9"])
    assert {c.source_id for c, _ in store.query("giraffe", k=100)} == {"src-9"}


def test_merges_and_compaction_keep_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = random_corpus(240, seed=5)
    store = BM25Store(tmp_path / "merged")
    store.add(corpus[:1])
    store.query("cat", k=1)
    sizes_seen = []
    for first in range(1, 199, 3):  # many small adds: segments merge as they pile up
        store.add(corpus[first : first + 3])
        sizes_seen.append(len(store._index.segment_sizes()))
    assert max(sizes_seen) <= 8
    assert min(sizes_seen[10:]) < max(sizes_seen)  # counts went down: merges happened
    assert results(store) == results(fresh_store(tmp_path / "a", corpus[:199]))

    # Deleting over a quarter of the documents renumbers them into one segment.
    store.delete([c.id for c in corpus[:120]])
    assert len(store._index.segment_sizes()) == 1
    store.add(corpus[199:])
    assert results(store) == results(fresh_store(tmp_path / "b", corpus[120:]))


def test_two_store_objects_on_one_folder_see_each_others_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = random_corpus(80, seed=6)
    app = fresh_store(tmp_path / "shared", corpus[:40])
    cli = BM25Store(tmp_path / "shared")  # as the CLI while the app runs
    app.query("cat", k=1)
    cli.query("cat", k=1)
    loads = LoadCounter(monkeypatch)
    # Both add terms neither knew: term ids are given under the write lock, never twice.
    app.add([chunk("a-new", "zebra crossing")])
    cli.add([chunk("c-new", "yak shaving zebra")])
    cli.add(corpus[40:])
    app.delete([c.id for c in corpus[:10]])
    cli.delete_source("src-3")
    for store in (app, cli):
        assert ids_of(store.query("zebra", k=5)) == ["a-new", "c-new"]
        assert ids_of(store.query("yak", k=5)) == ["c-new"]
    assert loads.calls >= 2  # each saw the other's writes and reloaded

    live = [c for c in corpus[10:] if c.source_id != "src-3"]
    live += [chunk("a-new", "zebra crossing"), chunk("c-new", "yak shaving zebra")]
    fresh = fresh_store(tmp_path / "fresh", live)
    assert results(app) == results(cli) == results(fresh)


OLD_SCHEMA = """
CREATE TABLE chunks (id TEXT PRIMARY KEY, source_id TEXT NOT NULL, text TEXT NOT NULL,
                     metadata TEXT NOT NULL);
CREATE INDEX chunks_source_id ON chunks(source_id);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta(key, value) VALUES ('generation', 3);
INSERT INTO meta(key, value) VALUES ('store', 12345);
"""


def test_a_database_of_the_older_format_is_migrated_on_open(tmp_path: Path) -> None:
    corpus = CORPUS + random_corpus(50, seed=7)
    folder = tmp_path / "old"
    folder.mkdir()
    with sqlite3.connect(folder / "chunks.sqlite3") as conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO chunks(id, source_id, text, metadata) VALUES (?, ?, ?, ?)",
            [(c.id, c.source_id, c.text, json.dumps(c.metadata())) for c in corpus],
        )
    conn.close()
    saved = folder / "index-12345-3"  # a bm25s index the old format saved
    saved.mkdir()
    (saved / "manifest.json").write_text("{}")

    migrated = BM25Store(folder)
    assert migrated.count() == len(corpus)
    assert not saved.exists()  # useless now
    assert results(migrated) == results(fresh_store(tmp_path / "fresh", corpus))
    assert ids_of(migrated.query("天气", k=5)) == ["zh-2"]
    best, _ = migrated.query("window mat", k=1)[0]
    assert best == CORPUS[0]
    migrated.add([chunk("n", "a brand new cat")])
    assert "n" in ids_of(migrated.query("cat", k=100))


def test_chunks_written_without_terms_are_repaired_on_load(filled: BM25Store) -> None:
    # An older Ragloom writing into an upgraded file writes the chunks table only. Caught
    # when the two tables' row counts differ (cheap, not exhaustive: see _load).
    filled.close()
    metadata = json.dumps(chunk("stray", "x").metadata())
    with sqlite3.connect(filled.path / "chunks.sqlite3") as conn:
        conn.execute(
            "INSERT INTO chunks(id, source_id, text, metadata) VALUES (?, ?, ?, ?)",
            ("stray", "src-x", "a stray wombat", metadata),
        )
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    conn.close()
    reopened = BM25Store(filled.path)
    assert ids_of(reopened.query("wombat", k=5)) == ["stray"]
    reopened.close()

    with sqlite3.connect(filled.path / "chunks.sqlite3") as conn:
        conn.execute("DELETE FROM chunks WHERE id = 'en-1'")
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    conn.close()
    assert ids_of(reopened.query("cat", k=5)) == ["en-2"]
    fresh = [c for c in CORPUS if c.id != "en-1"] + [chunk("stray", "a stray wombat", "src-x")]
    assert results(reopened) == results(fresh_store(filled.path.parent / "fresh", fresh))


def test_source_filter_is_exact_after_changes(store: BM25Store) -> None:
    store.add([chunk(f"a{i}", "apple apple apple pie") for i in range(30)])
    store.query("apple", k=1)
    store.add([chunk("b0", "one apple in many other words", "src-b")])
    store.add([chunk("a5", "a moved apple", "src-c")])  # upsert into another source
    store.delete(["a7"])
    assert ids_of(store.query("apple", k=1, source_ids=["src-b"])) == ["b0"]
    assert ids_of(store.query("apple", k=5, source_ids=["src-c"])) == ["a5"]
    assert len(store.query("apple", k=100, source_ids=["src-a"])) == 28
    assert store.query("apple", k=5, source_ids=["src-z"]) == []


def test_segmented_index_on_its_own() -> None:
    from ragloom.stores.bm25.index import DocTerms, SegmentedBM25

    def terms(*docs: dict[int, int]) -> DocTerms:
        return DocTerms.of(
            [(np.array(list(d), dtype=np.int32), np.array(list(d.values()))) for d in docs]
        )

    index = SegmentedBM25()
    index.add(["a", "b", "c"], ["s1", "s1", "s2"], terms({0: 2, 1: 1}, {1: 1}, {}))
    assert len(index) == 3 and "c" in index
    assert index.document_frequency(1) == 2
    assert [i for i, _ in index.search([1, 1], k=5)] == ["b", "a"]  # shorter doc first
    assert [i for i, _ in index.search([1], k=5, sources=["s2"])] == []
    with pytest.raises(ValueError, match="already in the index"):
        index.add(["a"], ["s1"], terms({2: 1}))
    assert index.remove({"a": np.array([0, 1]), "zz": np.array([5])}) == 1
    assert index.document_frequency(0) == 0 and index.document_frequency(1) == 1
    assert index.search([0], k=5) == []
    index.add(["a"], ["s2"], terms({0: 1}))  # a new version of "a", in another source
    assert [i for i, _ in index.search([0, 1], k=5, sources=["s2"])] == ["a"]
