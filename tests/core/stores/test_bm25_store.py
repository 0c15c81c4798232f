"""BM25Store and its tokenizer, with real bm25s and SQLite files under tmp_path."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store, FullTextStore, tokenize
from ragloom.stores.bm25 import TOKENIZER_VERSION


def chunk(chunk_id: str, text: str, source_id: str = "src-a", page: int | None = None) -> Chunk:
    return Chunk(
        id=chunk_id,
        text=text,
        source_id=source_id,
        source_name=f"{source_id}.txt",
        page=page,
        start=3,
        end=3 + len(text),
    )


CORPUS = [
    chunk("en-1", "The cat sat on the warm mat near the window.", page=1),
    chunk("en-2", "Dogs chase cats; a cat runs up the tree.", page=2),
    chunk("en-3", "Quarterly revenue grew eight percent on strong cloud sales."),
    chunk("en-4", "The invoice lists revenue and tax for the cloud contract.", "src-b"),
    chunk("zh-1", "向量数据库支持相似度检索，适合语义搜索。", "src-zh"),
    chunk("zh-2", "今天的天气很好，我们去公园散步。", "src-zh"),
    chunk("ja-1", "東京の天気は晴れです。テストを実行します。", "src-ja"),
]


@pytest.fixture
def store(tmp_path: Path) -> BM25Store:
    return BM25Store(tmp_path / "bm25")


@pytest.fixture
def filled(store: BM25Store) -> BM25Store:
    store.add(CORPUS)
    return store


def ids_of(hits: list[tuple[Chunk, float]]) -> list[str]:
    return [c.id for c, _ in hits]


class RebuildCounter:
    """Counts BM25Store._rebuild calls (a full re-index) while keeping them working."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = BM25Store._rebuild

        def counting(store: BM25Store, *args: Any) -> None:
            self.calls += 1
            original(store, *args)

        monkeypatch.setattr(BM25Store, "_rebuild", counting)


# --- tokenizer ------------------------------------------------------------------------------


def test_tokenize_lowercases_and_drops_english_stopwords() -> None:
    assert tokenize("The Cat is ON the Mat, and it's NOT there!") == ["cat", "mat", "s"]


def test_tokenize_keeps_unicode_words_and_normalises_width() -> None:
    assert tokenize("Café Straße naïve ＧＰＵ x_y 42") == [
        "café",
        "strasse",
        "naïve",
        "gpu",
        "x_y",
        "42",
    ]


def test_tokenize_cjk_as_bigrams_and_lone_characters_as_unigrams() -> None:
    assert tokenize("向量数据库") == ["向量", "量数", "数据", "据库"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("GPU加速器 很快") == ["gpu", "加速", "速器", "很快"]
    # Japanese: kanji, kana and katakana runs have no spaces either.
    assert tokenize("東京テスト") == ["東京", "京テ", "テス", "スト"]
    assert tokenize("한국어 검색") == ["한국", "국어", "검색"]
    # Punctuation splits runs.
    assert tokenize("天气。好") == ["天气", "好"]


def test_tokenize_empty_and_symbols() -> None:
    assert tokenize("") == []
    assert tokenize("  ... !!! ---  ") == []
    assert tokenize("the of and") == []


# --- store ----------------------------------------------------------------------------------


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


def test_a_batch_of_changes_costs_one_rebuild(
    store: BM25Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = RebuildCounter(monkeypatch)
    for item in CORPUS:
        store.add([item])
    store.delete(["zh-2"])
    assert counter.calls == 0  # nothing is indexed until a query needs it
    store.query("cat", k=3)
    store.query("revenue", k=3)
    assert counter.calls == 1
    store.delete(["never-there"])  # no change: the index stays valid
    store.query("cat", k=3)
    assert counter.calls == 1


def test_persistence_loads_the_saved_index_without_rebuilding(
    filled: BM25Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = filled.query("cat revenue 数据库", k=10)
    filled.close()

    counter = RebuildCounter(monkeypatch)
    reopened = BM25Store(tmp_path / "bm25")
    assert reopened.count() == len(CORPUS)
    assert reopened.query("cat revenue 数据库", k=10) == before
    assert counter.calls == 0


def test_another_store_object_sees_changes(filled: BM25Store, tmp_path: Path) -> None:
    other = BM25Store(tmp_path / "bm25")
    assert ids_of(other.query("giraffe", k=3)) == []
    filled.add([chunk("g", "a giraffe")])
    assert ids_of(other.query("giraffe", k=3)) == ["g"]
    other.delete(["g"])
    assert filled.query("giraffe", k=3) == []


def test_missing_or_stale_index_is_rebuilt(
    filled: BM25Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = filled.query("cat", k=5)
    filled.close()
    folder = tmp_path / "bm25"
    (saved,) = folder.glob("index-*")

    manifest = json.loads((saved / "manifest.json").read_text())
    manifest["version"][-1] = TOKENIZER_VERSION + 1  # as if built by another tokenizer
    (saved / "manifest.json").write_text(json.dumps(manifest))
    counter = RebuildCounter(monkeypatch)
    assert BM25Store(folder).query("cat", k=5) == expected
    assert counter.calls == 1

    shutil.rmtree(next(folder.glob("index-*")))  # as if the process died before saving
    assert BM25Store(folder).query("cat", k=5) == expected
    assert counter.calls == 2
    assert len(list(folder.glob("index-*"))) == 1  # old generations are cleaned up


def test_an_index_saved_for_a_deleted_database_is_not_used(filled: BM25Store) -> None:
    filled.query("cat", k=1)
    filled.close()
    (filled.path / "chunks.sqlite3").unlink()  # the index folder is left behind
    fresh = BM25Store(filled.path)
    assert fresh.query("cat", k=5) == []
    fresh.add([chunk("n", "a new cat")])
    assert ids_of(fresh.query("cat", k=5)) == ["n"]
    assert len(list(fresh.path.glob("index-*"))) == 1


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
