"""The PostgreSQL full-text store's index in memory: every process's copy follows every
other's writes exactly, reads only what changed, and the first layout is upgraded in place."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ragloom.stores import BM25Store, FullTextStore
from ragloom.stores.bm25 import tokenizer as bm25_tokenizer
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, tokenize
from ragloom.stores.postgres_fulltext import PostgresFullTextStore, mirror, schema
from ragloom.stores.postgres_fulltext import store as pg_store
from tests.core.stores.test_postgres_fulltext import connector
from tests.helpers.bm25_testkit import CORPUS, SCRIPT_QUERIES, SCRIPTS, chunk, tokenizer_v1
from tests.helpers.postgres import PostgresServer, database

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.postgres

WORDS = [
    "cat",
    "dog",
    "mat",
    "window",
    "cloud",
    "revenue",
    "tax",
    "tree",
    "park",
    "天气",
    "数据",
    "sqlite",
    "wal",
    "journal",
]


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    with database(postgres_server) as url:
        yield url


def plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def pair(pg_url: str) -> Iterator[tuple[PostgresFullTextStore, PostgresFullTextStore]]:
    """Two store objects on one collection, as two processes have."""
    first = PostgresFullTextStore(connector(pg_url), "shared")
    yield first, PostgresFullTextStore(connector(pg_url), "shared")
    first.drop()


def same_answers(embedded: FullTextStore, pg: FullTextStore, queries: list[str]) -> None:
    for query in queries:
        for sources in (None, ["s0", "s2"]):
            want = embedded.query(query, k=8, source_ids=sources)
            # The same index: the same chunks and exactly the same scores.
            assert pg.query(query, k=8, source_ids=sources) == want, (query, sources)


def test_writes_through_either_process_are_followed_exactly(
    pair: tuple[PostgresFullTextStore, PostgresFullTextStore], tmp_path: Path
) -> None:
    embedded = BM25Store(tmp_path / "bm25")
    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(6)]
    for step in range(60):
        writer = rng.choice(pair)
        action = rng.random()
        if action < 0.6:  # add or replace a few chunks, some ids already present
            batch = [
                chunk(
                    f"c{rng.randrange(40)}",
                    " ".join(rng.choices(WORDS, k=rng.randrange(1, 9))),
                    f"s{rng.randrange(4)}",
                )
                for _ in range(rng.randrange(1, 6))
            ]
            for store in (writer, embedded):
                store.add(batch)
        elif action < 0.85:
            ids = [f"c{rng.randrange(40)}" for _ in range(3)]
            for store in (writer, embedded):
                store.delete(ids)
        else:
            source = f"s{rng.randrange(4)}"
            for store in (writer, embedded):
                store.delete_source(source)
        if step % 3 == 0:  # readers lag a few changes behind at times
            same_answers(embedded, rng.choice(pair), queries)
    for store in pair:
        same_answers(embedded, store, queries)
        assert store.ids() == embedded.ids() and store.count() == embedded.count()


def test_a_reader_reads_only_what_changed(
    pair: tuple[PostgresFullTextStore, PostgresFullTextStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, reader = pair
    writer.add(CORPUS)
    loads = []
    real_load = mirror.IndexMirror._load

    def counted(self: mirror.IndexMirror, cur: Any, state: Any) -> Any:
        loads.append(state.generation)
        return real_load(self, cur, state)

    monkeypatch.setattr(mirror.IndexMirror, "_load", counted)
    assert reader.query("cat", k=1)[0][0].id == "en-1"
    writer.add([chunk("en-1", "a giraffe replaced the cat"), chunk("new", "giraffe")])
    writer.delete(["en-2"])
    assert [c.id for c, _ in reader.query("giraffe cat", k=5)] == ["en-1", "new"]
    assert len(loads) == 1  # read whole once; the three changes since were caught up


def test_a_reader_further_behind_than_the_kept_removals_reads_everything_again(
    pair: tuple[PostgresFullTextStore, PostgresFullTextStore],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(schema, "KEEP_GENERATIONS", 2)
    writer, reader = pair
    embedded = BM25Store(tmp_path / "bm25")
    for store in (writer, embedded):
        store.add(CORPUS)
    reader.query("cat", k=1)
    for n in range(5):  # each delete past the window forgets the oldest removals
        for store in (writer, embedded):
            store.add([chunk(f"n{n}", f"cat number{n}")])
            store.delete(["en-1", f"n{n - 1}"])
    same_answers(embedded, reader, ["cat", "number4", "dogs cat"])


def test_a_process_that_only_writes_never_reads_the_index_in(
    pair: tuple[PostgresFullTextStore, PostgresFullTextStore],
) -> None:
    writer, reader = pair
    writer.add(CORPUS)
    writer.ensure_index()  # the end of an ingestion in a worker
    assert not writer._mirror.loaded
    reader.query("cat", k=1)
    writer.add([chunk("late", "a late cat")])
    reader.ensure_index()  # a process that answers keeps its index up to date
    assert reader._mirror.generation == writer_generation(reader)


def test_questions_are_planned_afresh_on_a_connection_kept_open(pg_url: str) -> None:
    # A pool keeps connections open, and psycopg prepares a statement run five times on
    # one: PostgreSQL could then keep a plan made while the table was small (a scan of
    # every chunk) for as long as the connection lives, however much the table grows.
    kept = psycopg.connect(plain(pg_url))

    @contextmanager
    def same_connection() -> Iterator[Any]:
        yield kept
        kept.rollback()

    store = PostgresFullTextStore(same_connection, "kept")
    store.add(CORPUS)
    for _ in range(12):
        assert store.query("cat revenue", k=2)
        store.find_terms(["cat", "数据库"])
    store.add([chunk("late", "a late cat")])  # and an index that catches up
    assert "late" in {c.id for c, _ in store.query("late cat", k=3)}
    prepared = kept.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    assert not [
        row for row in prepared if "fulltext_chunks" in row[0] or "fulltext_terms" in row[0]
    ]
    kept.close()


def writer_generation(store: PostgresFullTextStore) -> int:
    with store.connect() as conn:
        row = conn.execute(
            "SELECT generation FROM fulltext_collections WHERE name = %s", (store.collection,)
        ).fetchone()
    return int(row[0])


# The first layout of these tables (before the index in memory), as a deployment of the
# previous release has them: a row per term of each chunk, scored by SQL.
FIRST_LAYOUT = """
CREATE TABLE fulltext_collections (id serial PRIMARY KEY, name text NOT NULL UNIQUE,
    documents bigint NOT NULL DEFAULT 0, total_length bigint NOT NULL DEFAULT 0);
CREATE TABLE fulltext_chunks (doc bigserial PRIMARY KEY, collection integer NOT NULL,
    id text NOT NULL, source_id text NOT NULL, text text NOT NULL, metadata jsonb NOT NULL,
    length integer NOT NULL, UNIQUE (collection, id));
CREATE INDEX fulltext_chunks_source ON fulltext_chunks (collection, source_id);
CREATE TABLE fulltext_postings (collection integer NOT NULL, term text NOT NULL,
    doc bigint NOT NULL, tf integer NOT NULL, length integer NOT NULL,
    PRIMARY KEY (collection, term, doc) INCLUDE (tf, length));
CREATE INDEX fulltext_postings_doc ON fulltext_postings (doc);
CREATE TABLE fulltext_terms (collection integer NOT NULL, term text NOT NULL,
    df integer NOT NULL, PRIMARY KEY (collection, term));
"""


def test_tables_of_the_first_layout_are_upgraded_keeping_every_chunk(
    pg_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(plain(pg_url)) as conn:
        conn.execute(FIRST_LAYOUT)
        for name, chunks in (("old", CORPUS), ("older", CORPUS[:2])):
            (collection,) = conn.execute(
                "INSERT INTO fulltext_collections (name, documents, total_length) "
                "VALUES (%s, 0, 0) RETURNING id",
                (name,),
            ).fetchone()
            for c in chunks:
                counts = Counter(tokenize(c.text))
                (doc,) = conn.execute(
                    "INSERT INTO fulltext_chunks (collection, id, source_id, text, metadata, "
                    "length) VALUES (%s, %s, %s, %s, %s, %s) RETURNING doc",
                    (
                        collection,
                        c.id,
                        c.source_id,
                        c.text,
                        json.dumps(c.metadata()),
                        sum(counts.values()),
                    ),
                ).fetchone()
                for term, tf in counts.items():
                    conn.execute(
                        "INSERT INTO fulltext_postings VALUES (%s, %s, %s, %s, %s)",
                        (collection, term, doc, tf, sum(counts.values())),
                    )
            conn.execute(
                "UPDATE fulltext_collections SET documents = %s WHERE id = %s",
                (len(chunks), collection),
            )
    store = PostgresFullTextStore(connector(pg_url), "old")
    embedded = BM25Store(tmp_path / "bm25")
    embedded.add(CORPUS)
    assert store.count() == len(CORPUS) and store.ids() == embedded.ids()
    same_answers(embedded, store, ["cat", "revenue cloud", "天气", "东京 天気"])
    older = PostgresFullTextStore(connector(pg_url), "older")
    assert [c.id for c, _ in older.query("cat", k=5)] == ["en-1", "en-2"]
    store.add([chunk("after", "a cat after the upgrade")])
    assert "after" in {c.id for c, _ in store.query("cat", k=5)}
    with psycopg.connect(plain(pg_url)) as conn:
        assert conn.execute("SELECT to_regclass('fulltext_postings')").fetchone() == (None,)


def test_a_collection_of_tokenizer_version_1_is_tokenized_again_and_finds_every_script(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tokenizer_v1(monkeypatch, pg_store, schema, bm25_tokenizer):
        PostgresFullTextStore(connector(pg_url), "v1").add(CORPUS + SCRIPTS)
    store = PostgresFullTextStore(connector(pg_url), "v1")
    for query, wanted in SCRIPT_QUERIES.items():
        assert [c.id for c, _ in store.query(query, k=3)][:1] == [wanted], query
    with psycopg.connect(plain(pg_url)) as conn:
        version = conn.execute("SELECT tokenizer FROM fulltext_collections WHERE name = 'v1'")
        assert version.fetchone() == (TOKENIZER_VERSION,)
