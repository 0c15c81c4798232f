"""Full text in PostgreSQL: the chunks and their terms in the database every process shares,
scored by BM25 with the embedded store's index in memory (see :mod:`.store`)."""

from ragloom.stores.postgres_fulltext.store import ConnectionFactory, PostgresFullTextStore

__all__ = ["ConnectionFactory", "PostgresFullTextStore"]
