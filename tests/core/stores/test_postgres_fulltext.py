"""PostgresFullTextStore on a throwaway PostgreSQL cluster: the embedded BM25 store's
answers (the same chunks, scores and term lookups), shared by every connection at once,
and exact counts under concurrent writers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store, FullTextStore, StoreUnavailableError
from ragloom.stores.bm25 import terms as bm25_terms
from ragloom.stores.postgres_fulltext import PostgresFullTextStore, schema, writes
from tests.helpers.bm25_testkit import CORPUS, chunk, ids_of
from tests.helpers.ports import free_port
from tests.helpers.postgres import PostgresServer, database

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.postgres

EXTRA = [
    chunk("sq-1", "Call sqlite3_vfs_find() to get the default VFS. Since version 3.40.0.", "s1"),
    chunk("sq-2", "The journal_mode PRAGMA takes DELETE, WAL or OFF. Begin a transaction.", "s1"),
    chunk("sq-3", "Concurrent readers see a snapshot of the cat database.", "s2"),
    chunk("ko-1", "서울의 날씨는 맑습니다. 고양이가 잠을 잡니다.", "src-ko"),
]

QUERIES = [
    "cloud revenue",
    "cat cats",
    "什么是向量数据库？",
    "天气",
    "天気 テスト",
    "서울 날씨",
    "sqlite3_vfs_find default VFS",
    "journal mode WAL",
    "the cat on the mat near the window",
    "zebra",
]


@pytest.fixture(scope="module")
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    with database(postgres_server) as url:
        yield url


def connector(url: str) -> Any:
    def connect() -> AbstractContextManager[Any]:
        return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))

    return connect


@pytest.fixture
def pg_store(pg_url: str, request: pytest.FixtureRequest) -> Iterator[PostgresFullTextStore]:
    store = PostgresFullTextStore(connector(pg_url), f"test_{request.node.name}"[:60])
    yield store
    store.drop()


@pytest.fixture
def both(pg_store: PostgresFullTextStore, tmp_path: Path) -> tuple[FullTextStore, FullTextStore]:
    embedded = BM25Store(tmp_path / "bm25")
    for store in (embedded, pg_store):
        store.add(CORPUS + EXTRA)
    return embedded, pg_store


def assert_same_hits(embedded: FullTextStore, pg: FullTextStore, query: str, **kwargs: Any) -> None:
    want, got = embedded.query(query, **kwargs), pg.query(query, **kwargs)
    assert ids_of(got) == ids_of(want), query
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5), query
    assert [c for c, _ in got] == [c for c, _ in want]  # text and metadata round-trip


def test_it_answers_as_the_embedded_store_does(
    both: tuple[FullTextStore, FullTextStore],
) -> None:
    embedded, pg = both
    for query in QUERIES:
        assert_same_hits(embedded, pg, query, k=5)
        assert_same_hits(embedded, pg, query, k=2, source_ids=["src-a", "s2"])
    assert pg.query("天气", k=5)[0][0].id == "zh-2"  # CJK by character bigrams
    assert pg.query("서울", k=5)[0][0].id == "ko-1"
    assert pg.query("cat", k=0) == [] and pg.query("the and of", k=5) == []
    assert pg.query("cat", k=5, source_ids=[]) == []
    assert pg.count() == embedded.count() and pg.ids() == embedded.ids()


def test_term_lookups_match_the_embedded_store(
    both: tuple[FullTextStore, FullTextStore],
) -> None:
    embedded, pg = both
    terms = [
        "sqlite3_vfs_find",
        "journal_mode",
        "WAL",
        "timediff",
        "3.40.0",
        "3.41.0",
        "begin concurrent",
        "default VFS",
        "VFS default",
        "向量",
        "the",
        "...",
    ]
    assert pg.find_terms(terms) == embedded.find_terms(terms)
    for sources in (["s1"], ["s2"], ["src-zh", "s2"], []):
        assert pg.find_terms(terms, sources) == embedded.find_terms(terms, sources)


def test_changes_keep_it_equal_to_the_embedded_store(
    both: tuple[FullTextStore, FullTextStore],
) -> None:
    embedded, pg = both
    for store in both:
        store.add([chunk("en-1", "A different giraffe paragraph", "src-new", page=9)])
        store.add([chunk("x", "first cat version"), chunk("x", "last cat version")])
        store.delete(["en-2", "unknown-id"])
        store.delete_source("src-zh")
        store.delete_source("src-never")
        store.delete([])
    assert pg.ids() == embedded.ids() and pg.count() == embedded.count()
    for query in [*QUERIES, "giraffe", "first", "last version"]:
        assert_same_hits(embedded, pg, query, k=5)
    assert pg.find_terms(["giraffe", "window", "向量"]) == {
        "giraffe": True,
        "window": False,
        "向量": False,
    }


def test_ties_are_broken_by_id(pg_store: PostgresFullTextStore) -> None:
    pg_store.add([chunk(i, "same words here") for i in ("c", "a", "d", "b")])
    assert ids_of(pg_store.query("words", k=3)) == ["a", "b", "c"]
    # Far more ties than asked for, stored in the opposite order of their ids.
    pg_store.add([chunk(f"t{i:03d}", "same words here") for i in reversed(range(200))])
    assert ids_of(pg_store.query("words", k=5)) == ["a", "b", "c", "d", "t000"]


def test_an_unused_store_holds_nothing_and_creates_nothing(pg_url: str) -> None:
    store = PostgresFullTextStore(connector(pg_url), "never-written")
    assert store.count() == 0 and store.ids() == set()
    assert store.query("cat", k=5) == []
    assert store.find_terms(["cat"]) == {"cat": False}
    store.delete(["a"])
    store.delete_source("s")
    store.drop()
    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM fulltext_collections WHERE name = 'never-written'"
        ).fetchone()
    assert row == (0,)


def test_drop_removes_everything_and_the_store_stays_usable(
    pg_store: PostgresFullTextStore, pg_url: str
) -> None:
    other = PostgresFullTextStore(connector(pg_url), pg_store.collection + "-other")
    other.add([chunk("o", "another index entirely")])
    pg_store.add(CORPUS)
    pg_store.drop()
    assert pg_store.count() == 0 and pg_store.query("cat", k=5) == []
    assert ids_of(other.query("another", k=5)) == ["o"]  # other collections are untouched
    pg_store.add([chunk("n", "a new cat")])
    assert ids_of(pg_store.query("cat", k=5)) == ["n"]
    other.drop()


def test_every_connection_sees_a_change_at_once(
    pg_store: PostgresFullTextStore, pg_url: str
) -> None:
    # Another process's store: nothing to reload, the next statement sees the commit.
    elsewhere = PostgresFullTextStore(connector(pg_url), pg_store.collection)
    pg_store.add(CORPUS)
    assert ids_of(elsewhere.query("window mat", k=1)) == ["en-1"]
    elsewhere.delete(["en-1"])
    assert "en-1" not in ids_of(pg_store.query("window mat", k=5))


def test_nul_characters_are_stored_without_moving_offsets(
    pg_store: PostgresFullTextStore,
) -> None:
    text = "before\x00after nulword"
    pg_store.add([Chunk("z", text, "s", "na\x00me.txt", start=0, end=len(text))])
    (hit, _), *_ = pg_store.query("nulword", k=1)
    assert hit.text == "before\ufffdafter nulword" and len(hit.text) == len(text)
    assert hit.source_name == "na\ufffdme.txt"


def test_a_failed_add_leaves_nothing_behind(
    pg_store: PostgresFullTextStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_store.add([chunk("kept", "kept words")])

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the disk is full")

    # Fails after the chunks and their terms were written, before the counts.
    monkeypatch.setattr(writes, "add_to_counts", broken)
    with pytest.raises(RuntimeError):
        pg_store.add([chunk("lost", "lost words"), chunk("kept", "replaced")])
    monkeypatch.undo()
    assert pg_store.ids() == {"kept"} and pg_store.count() == 1
    assert ids_of(pg_store.query("kept words", k=5)) == ["kept"]
    assert pg_store.query("lost replaced", k=5) == []


def test_a_phrase_with_more_candidates_than_it_reads_is_not_ruled_out(
    pg_store: PostgresFullTextStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_store.add([chunk(f"x{i}", "beta alpha") for i in range(4)] + [chunk("y", "alpha beta")])
    monkeypatch.setattr(bm25_terms, "MAX_PHRASE_CANDIDATES", 2)
    assert pg_store.find_terms(["alpha beta"]) == {"alpha beta": True}
    pg_store.delete(["y", "x3", "x2"])  # two candidates left, both read: ruled out
    assert pg_store.find_terms(["alpha beta"]) == {"alpha beta": False}


def test_concurrent_writers_keep_the_counts_exact(
    pg_store: PostgresFullTextStore, pg_url: str, tmp_path: Path
) -> None:
    # Four writers (their own store objects, as four processes have) into one collection,
    # overlapping ids and terms; afterwards the scores are those of the same chunks
    # added to a fresh embedded store, so document frequencies and lengths are exact.
    def writer(n: int) -> None:
        store = PostgresFullTextStore(connector(pg_url), pg_store.collection)
        for round_ in range(5):
            store.add(
                [chunk(f"w{n}-{i}", f"shared words {n} round{round_} x{i}") for i in range(20)]
            )
            store.add([chunk(f"common-{round_}", f"common words written by {n}")])
            store.delete([f"w{n}-{round_}"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = [hit for hit, _ in pg_store.query("shared common words", k=1000)]
    # Each round re-adds all 20 of a writer's ids and deletes one: 19 are left of each.
    assert len(final) == pg_store.count() == 4 * 19 + 5
    embedded = BM25Store(tmp_path / "check")
    embedded.add(final)
    for query in ("shared words", "common", "round3 x7", "written 2"):
        assert_same_hits(embedded, pg_store, query, k=10)


def test_chunks_come_back_by_id_as_the_embedded_store_gives_them(
    both: tuple[FullTextStore, FullTextStore],
) -> None:
    embedded, pg = both
    assert isinstance(embedded, BM25Store) and isinstance(pg, PostgresFullTextStore)
    asked = ["zh-2", "en-1", "nowhere", "en-1"]
    assert pg.chunks(asked) == embedded.chunks(asked)
    assert set(pg.chunks(asked)) == {"zh-2", "en-1"}  # unknown ids left out
    assert pg.chunks(asked)["zh-2"].text == "今天的天气很好，我们去公园散步。"
    assert pg.chunks([]) == {}


def test_a_server_that_refuses_connections_is_said_to_be_unavailable() -> None:
    port = free_port()  # nothing listens there
    store = PostgresFullTextStore(connector(f"postgresql://ragloom@127.0.0.1:{port}/x"), "c")
    for call in (lambda: store.query("cat", k=3), lambda: store.add([chunk("a", "cat")])):
        with pytest.raises(StoreUnavailableError) as away:
            call()
        assert str(away.value) == (
            "the PostgreSQL server could not be reached (the connection was refused or broke off)"
        )
        assert str(port) not in str(away.value)  # the driver's words stay in the chain
        assert isinstance(away.value.__cause__, psycopg.OperationalError)


def test_a_connection_cut_off_mid_write_leaves_nothing_half_written(
    pg_store: PostgresFullTextStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_store.add([chunk("kept", "kept words")])
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    add_to_counts = writes.add_to_counts

    def cut_first(cur: Any, *args: Any) -> None:
        # The chunks and their terms are written; the server ends this connection now.
        with psycopg.connect(plain, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (cur.connection.info.backend_pid,))
        add_to_counts(cur, *args)

    monkeypatch.setattr(writes, "add_to_counts", cut_first)
    with pytest.raises(StoreUnavailableError, match="PostgreSQL server could not be reached"):
        pg_store.add([chunk("lost", "lost words"), chunk("kept", "replaced")])
    monkeypatch.undo()
    # The next connection works, and nothing of the cut transaction was kept.
    assert pg_store.ids() == {"kept"} and pg_store.count() == 1
    assert pg_store.query("lost replaced", k=5) == []


def test_an_error_of_a_reachable_server_is_not_an_outage(
    pg_store: PostgresFullTextStore, pg_url: str
) -> None:
    # A writer waits for the collection's lock past its lock_timeout: PostgreSQL answered,
    # so the error is its own (an OperationalError too), not "could not be reached".
    pg_store.add([chunk("kept", "kept words")])
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    impatient = PostgresFullTextStore(
        lambda: psycopg.connect(plain, options="-c lock_timeout=100"), pg_store.collection
    )
    with psycopg.connect(plain) as holder:
        holder.execute(
            "SELECT pg_advisory_xact_lock(%s, id) FROM fulltext_collections WHERE name = %s",
            (schema.LOCK_NAMESPACE, pg_store.collection),
        )
        with pytest.raises(psycopg.errors.LockNotAvailable):
            impatient.add([chunk("late", "late words")])
    assert pg_store.ids() == {"kept"}
