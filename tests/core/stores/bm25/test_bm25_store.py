"""BM25Store and its tokenizer, with real bm25s and SQLite files under tmp_path."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from ragloom.stores import BM25Store, FullTextStore
from ragloom.stores.bm25 import store as bm25_store
from ragloom.stores.bm25 import tokenizer as bm25_tokenizer
from ragloom.stores.bm25 import upgrade as bm25_upgrade
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION
from tests.helpers.bm25_testkit import (
    CORPUS,
    SCRIPT_QUERIES,
    SCRIPTS,
    LoadCounter,
    TokenizeCounter,
    bump_tokenizer_version,
    chunk,
    ids_of,
    tokenizer_v1,
)

# --- tokenizer ------------------------------------------------------------------------------


def test_is_a_full_text_store(store: BM25Store) -> None:
    assert isinstance(store, FullTextStore)


def test_empty_store_returns_nothing(store: BM25Store) -> None:
    assert store.count() == 0
    assert store.ids() == set()
    assert store.query("cat", k=5) == []


def test_query_ranks_by_bm25(filled: BM25Store) -> None:
    hits = filled.query("cloud revenue", k=5)
    assert set(ids_of(hits)) == {"en-3", "en-4"}
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(s > 0 for s in scores)

    best, _ = filled.query("window mat", k=1)[0]
    assert best == CORPUS[0]  # text and metadata round-trip


def test_k_is_respected(filled: BM25Store) -> None:
    assert len(filled.query("cat cats revenue cloud", k=2)) == 2
    assert filled.query("cat", k=0) == []


def test_query_without_known_terms_returns_nothing(filled: BM25Store) -> None:
    assert filled.query("zebra quantum", k=5) == []
    assert filled.query("the and of", k=5) == []  # stopwords only
    assert filled.query("", k=5) == []


def test_chinese_document_found_by_chinese_query(filled: BM25Store) -> None:
    hits = filled.query("什么是向量数据库？", k=3)
    assert ids_of(hits)[0] == "zh-1"
    assert "zh-2" not in ids_of(hits)
    assert ids_of(filled.query("天气", k=5)) == ["zh-2"]  # simplified 气
    assert ids_of(filled.query("天気", k=5)) == ["ja-1"]  # Japanese 気
    assert ids_of(filled.query("テスト", k=5)) == ["ja-1"]


def test_words_of_other_scripts_are_found_by_their_own_word(store: BM25Store) -> None:
    # Hindi vowel signs, Arabic vowel marks (in the chunk, not in the query), Thai without
    # spaces, İ case-folded.
    store.add(CORPUS + SCRIPTS)
    for query, wanted in SCRIPT_QUERIES.items():
        assert ids_of(store.query(query, k=3))[:1] == [wanted], query
    assert ids_of(store.query("पति", k=3)) == ["hi-family"]  # not पानी, not पिता


def test_source_ids_filter_scores_only_allowed_sources(store: BM25Store) -> None:
    # Ten strong matches in src-a and one weak match in src-b: an over-fetch-then-filter
    # implementation asking for a few would lose the src-b chunk.
    store.add([chunk(f"a{i}", "apple apple apple apple pie") for i in range(10)])
    store.add([chunk("b0", "one apple among many other words here", "src-b")])

    assert ids_of(store.query("apple", k=1, source_ids=["src-b"])) == ["b0"]
    assert len(store.query("apple", k=20, source_ids={"src-a"})) == 10
    assert len(store.query("apple", k=20, source_ids=["src-a", "src-b"])) == 11
    assert store.query("apple", k=5, source_ids=[]) == []
    assert store.query("apple", k=5, source_ids=["unknown"]) == []


def test_ties_are_broken_by_id(store: BM25Store) -> None:
    store.add([chunk(i, "same words here") for i in ("c", "a", "d", "b")])
    assert ids_of(store.query("words", k=3)) == ["a", "b", "c"]


def test_upsert_replaces_text_and_metadata(filled: BM25Store) -> None:
    filled.add([chunk("en-1", "A completely different giraffe paragraph", "src-new", page=9)])
    assert filled.count() == len(CORPUS)
    assert "en-1" not in ids_of(filled.query("window", k=5))
    (hit, _), *_ = filled.query("giraffe", k=5)
    assert hit.id == "en-1"
    assert (hit.source_id, hit.page) == ("src-new", 9)
    assert ids_of(filled.query("giraffe", k=5, source_ids=["src-new"])) == ["en-1"]


def test_repeated_id_in_one_batch_keeps_the_last(store: BM25Store) -> None:
    store.add([chunk("x", "first version"), chunk("x", "last version")])
    assert store.count() == 1
    assert store.query("last", k=1)[0][0].text == "last version"
    assert store.query("first", k=1) == []


def test_delete_delete_source_ids_count(filled: BM25Store) -> None:
    filled.delete(["en-1", "unknown-id"])
    assert "en-1" not in filled.ids()
    assert ids_of(filled.query("cat", k=5)) == ["en-2"]

    filled.delete_source("src-zh")
    assert filled.query("向量数据库", k=5) == []
    assert filled.ids() == {"en-2", "en-3", "en-4", "ja-1"}
    assert filled.count() == 4
    filled.delete([])
    filled.delete_source("src-never")
    assert filled.count() == 4


def test_writes_update_the_loaded_index_in_place(
    store: BM25Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Replaces the old "a batch of changes costs one rebuild": there is no rebuild now.
    loads = LoadCounter(monkeypatch)
    for item in CORPUS:
        store.add([item])
    store.delete(["zh-2"])
    assert loads.calls == 0  # nothing is loaded until a query needs it
    assert ids_of(store.query("cat", k=3)) == ["en-1", "en-2"]
    assert loads.calls == 1
    store.add([chunk("g", "a giraffe and a cat")])
    store.delete(["en-1"])
    store.delete_source("src-b")
    store.delete(["never-there"])  # no change at all
    assert ids_of(store.query("cat giraffe", k=5)) == ["g", "en-2"]
    assert ids_of(store.query("invoice", k=5)) == []
    assert loads.calls == 1  # our own writes were applied to the index, not reloaded


def test_reopening_loads_the_stored_terms_without_tokenizing(
    filled: BM25Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Replaces the old "persistence loads the saved index without rebuilding".
    before = filled.query("cat revenue 数据库", k=10)
    filled.close()

    tokenized = TokenizeCounter(monkeypatch)
    reopened = BM25Store(tmp_path / "bm25")
    assert reopened.count() == len(CORPUS)
    assert reopened.query("cat revenue 数据库", k=10) == before
    assert tokenized.texts == ["cat revenue 数据库"]  # the question only


def test_an_add_tokenizes_only_the_new_chunks(
    filled: BM25Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    filled.query("cat", k=1)  # loaded
    tokenized = TokenizeCounter(monkeypatch)
    filled.add([chunk("n1", "a new cat"), chunk("n2", "another new dog")])
    filled.delete(["en-3"])
    filled.add([chunk("en-4", "replaced text about a cat", "src-b")])
    assert sorted(tokenized.texts) == ["a new cat", "another new dog", "replaced text about a cat"]
    assert ids_of(filled.query("cat", k=10))[:1] == ["n1"]
    assert set(ids_of(filled.query("cat", k=10))) == {"n1", "en-4", "en-1", "en-2"}


def test_a_new_tokenizer_version_tokenizes_every_chunk_again(
    filled: BM25Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Replaces the old "missing or stale index is rebuilt": terms are now in the database.
    expected = filled.query("cat revenue", k=5)
    filled.close()
    newer = bump_tokenizer_version(monkeypatch)
    tokenized = TokenizeCounter(monkeypatch)
    reopened = BM25Store(tmp_path / "bm25")
    assert reopened.query("cat revenue", k=5) == expected
    assert sorted(tokenized.texts) == sorted([c.text for c in CORPUS] + ["cat revenue"])
    reopened.close()
    with sqlite3.connect(tmp_path / "bm25" / "chunks.sqlite3") as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
    assert version == newer
    # Once is enough.
    assert BM25Store(tmp_path / "bm25").query("cat revenue", k=5) == expected
    assert len(tokenized.texts) == len(CORPUS) + 2


def test_a_store_of_tokenizer_version_1_is_tokenized_again_and_finds_every_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tokenizer_v1(monkeypatch, bm25_store, bm25_upgrade, bm25_tokenizer):
        BM25Store(tmp_path / "bm25").add(CORPUS + SCRIPTS)
    tokenized = TokenizeCounter(monkeypatch)
    reopened = BM25Store(tmp_path / "bm25")
    for query, wanted in SCRIPT_QUERIES.items():
        assert ids_of(reopened.query(query, k=3))[:1] == [wanted], query
    assert len(tokenized.texts) == len(CORPUS + SCRIPTS) + len(SCRIPT_QUERIES)
    reopened.close()
    with sqlite3.connect(tmp_path / "bm25" / "chunks.sqlite3") as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
    assert version == TOKENIZER_VERSION


def test_a_deleted_database_starts_empty(filled: BM25Store) -> None:
    filled.query("cat", k=1)
    filled.close()
    (filled.path / "chunks.sqlite3").unlink()
    fresh = BM25Store(filled.path)
    assert fresh.query("cat", k=5) == []
    fresh.add([chunk("n", "a new cat")])
    assert ids_of(fresh.query("cat", k=5)) == ["n"]
    # Everything is in the one database file now: no index folders beside it.
    assert [p.name for p in fresh.path.iterdir()] == ["chunks.sqlite3"]


def test_another_store_object_sees_changes(filled: BM25Store, tmp_path: Path) -> None:
    other = BM25Store(tmp_path / "bm25")
    assert ids_of(other.query("giraffe", k=3)) == []
    filled.add([chunk("g", "a giraffe")])
    assert ids_of(other.query("giraffe", k=3)) == ["g"]
    other.delete(["g"])
    assert filled.query("giraffe", k=3) == []


def test_documents_without_terms(store: BM25Store) -> None:
    store.add([chunk("s", "the of and"), chunk("p", "!!!")])
    assert store.query("the", k=5) == []
    assert store.query("anything", k=5) == []
    store.add([chunk("w", "words at last")])
    assert ids_of(store.query("words", k=5)) == ["w"]


def test_drop_removes_everything_and_the_store_stays_usable(filled: BM25Store) -> None:
    filled.query("cat", k=1)  # make sure an index was saved
    filled.drop()
    assert not filled.path.exists()
    assert filled.count() == 0
    assert filled.query("cat", k=5) == []
    filled.add([chunk("n", "new cat")])
    assert ids_of(filled.query("cat", k=5)) == ["n"]


def test_drop_keeps_foreign_files(store: BM25Store) -> None:
    store.add([chunk("a", "x y")])
    (store.path / "notes.txt").write_text("not the store's")
    store.drop()
    assert sorted(p.name for p in store.path.iterdir()) == ["notes.txt"]


def test_constructor_touches_nothing(tmp_path: Path) -> None:
    BM25Store(tmp_path / "lazy")
    assert not (tmp_path / "lazy").exists()


def test_concurrent_adds_and_queries(store: BM25Store) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                store.add([chunk(f"t{n}-{i}", f"thread{n} word{i} shared")])
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                hits = store.query("shared", k=5)
                assert all("shared" in c.text for c, _ in hits)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.count() == 80
    assert len(store.query("shared", k=100)) == 80


# --- the incremental index against a store built at once, and against bm25s ----------------

WORDS = [
    *("cat", "dog", "tree", "revenue", "cloud", "tax", "invoice", "report", "market"),
    *("growth", "energy", "policy", "union", "budget", "school", "health", "border"),
    *("climate", "chips", "science", "bridge", "road", "water", "price", "job"),
]
CJK_WORDS = ["向量", "数据库", "天气", "東京", "検索", "公园"]
