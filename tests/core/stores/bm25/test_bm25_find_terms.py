"""BM25Store.find_terms: whether terms occur, from the vocabulary and posting lists."""

from __future__ import annotations

import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from ragloom.stores.base import FullTextStore
from ragloom.stores.bm25 import terms as terms_module
from ragloom.stores.bm25.terms import MAX_LOOKUP_TERMS, holds_in_order
from ragloom.stores.bm25.tokenizer import tokenize
from tests.helpers.bm25_testkit import chunk


def _chunk(chunk_id: str, text: str, source: str = "s1") -> Chunk:
    return chunk(chunk_id, text, source_id=source)


@pytest.fixture
def docs(store: BM25Store) -> BM25Store:
    store.add(
        [
            _chunk("a", "Call sqlite3_vfs_find() to get the default VFS. Since version 3.40.0."),
            _chunk("b", "The journal_mode PRAGMA takes DELETE, WAL or OFF. Begin a transaction."),
            _chunk("c", "Concurrent readers see a snapshot.", source="s2"),
        ]
    )
    return store


def test_words_and_identifiers_are_found_as_the_index_tokenizes_them(docs: BM25Store) -> None:
    found = docs.find_terms(["sqlite3_vfs_find", "journal_mode", "WAL", "timediff", "wal2"])
    assert found == {
        "sqlite3_vfs_find": True,
        "journal_mode": True,
        "WAL": True,  # case-folded, as chunks are
        "timediff": False,
        "wal2": False,
    }


def test_a_phrase_is_found_only_with_its_words_in_order_in_one_chunk(docs: BM25Store) -> None:
    found = docs.find_terms(["3.40.0", "3.41.0", "begin concurrent", "default VFS", "VFS default"])
    assert found == {
        "3.40.0": True,
        "3.41.0": False,  # no "41"
        "begin concurrent": False,  # both words occur, in different chunks
        "default VFS": True,
        "VFS default": False,  # same chunk, other order
    }


def test_only_the_given_sources_are_searched(docs: BM25Store) -> None:
    assert docs.find_terms(["concurrent", "journal_mode"], ["s1"]) == {
        "concurrent": False,
        "journal_mode": True,
    }
    assert docs.find_terms(["concurrent"], ["s2"]) == {"concurrent": True}
    assert docs.find_terms(["concurrent"], []) == {"concurrent": False}


def test_a_deleted_chunks_terms_are_gone(docs: BM25Store) -> None:
    docs.delete(["c"])
    assert docs.find_terms(["concurrent", "snapshot"]) == {"concurrent": False, "snapshot": False}


def test_terms_it_cannot_tell_about_are_none(docs: BM25Store) -> None:
    assert docs.find_terms(["the", "..."]) == {"the": None, "...": None}  # no indexed word
    many = [f"word{i}" for i in range(MAX_LOOKUP_TERMS + 2)]
    found = docs.find_terms(many)
    assert found[many[0]] is False and found[many[-1]] is None and found[many[-2]] is None


def test_a_phrase_with_more_candidates_than_it_reads_is_not_ruled_out(
    store: BM25Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add([_chunk(f"x{i}", "beta alpha") for i in range(4)] + [_chunk("y", "alpha beta")])
    monkeypatch.setattr(terms_module, "MAX_PHRASE_CANDIDATES", 2)
    # "alpha beta" is in order only in the fifth chunk, past the two read: cannot rule it out.
    assert store.find_terms(["alpha beta"]) == {"alpha beta": True}
    store.delete(["y", "x3"])  # three candidates left, none in order, two read
    assert store.find_terms(["alpha beta"]) == {"alpha beta": True}
    store.delete(["x2"])  # two candidates, both read: ruled out
    assert store.find_terms(["alpha beta"]) == {"alpha beta": False}


def test_in_order_matching() -> None:
    assert holds_in_order(tokenize("a 3.41.0 b"), tokenize("3.41.0"))
    assert not holds_in_order(tokenize("3.41.1 or 0"), tokenize("3.41.0"))
    assert not holds_in_order(tokenize("alpha"), tokenize("alpha beta"))
    assert not holds_in_order([], [])


def test_a_store_that_does_not_implement_it_cannot_tell() -> None:
    # The base class's default, called on a store that has its own: never "absent".
    assert FullTextStore.find_terms(BM25Store("unused"), ["x", "y"]) == {"x": None, "y": None}
