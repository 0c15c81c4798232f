"""What the PostgreSQL full-text store's writers do in their transaction, under the
collection's advisory lock (which ``PostgresFullTextStore.add`` and its deletes take): give
new terms their ids, keep the counts, remove chunks and leave the tombstones an index in
memory catches up from."""

from __future__ import annotations

from typing import Any

from ragloom.stores.postgres_fulltext import schema

__all__ = ["add_to_counts", "give_term_ids", "remove_chunks"]


def give_term_ids(cur: Any, collection: int, terms: list[str], given: int) -> dict[str, int]:
    """The ids of ``terms`` in the collection's vocabulary, the new ones given the next
    ids (under the writer's lock, so every process agrees on them)."""
    cur.execute(
        "SELECT term, term_id FROM fulltext_terms WHERE collection = %s AND term = ANY(%s)",
        (collection, terms),
    )
    ids = {term: int(term_id) for term, term_id in cur.fetchall()}
    new = [t for t in terms if t not in ids]
    if new:
        with cur.copy("COPY fulltext_terms (collection, term, term_id) FROM STDIN") as copy:
            for offset, term in enumerate(new):
                ids[term] = given + offset
                copy.write_row((collection, term, given + offset))
        cur.execute(
            "UPDATE fulltext_collections SET terms = %s WHERE id = %s",
            (given + len(new), collection),
        )
    return ids


def add_to_counts(cur: Any, collection: int, added: int, length: int) -> None:
    """Add chunks and their lengths to the collection's counts."""
    cur.execute(
        "UPDATE fulltext_collections SET documents = documents + %s, "
        "total_length = total_length + %s WHERE id = %s",
        (added, length, collection),
    )


def remove_chunks(
    cur: Any, collection: int, generation: int, condition: str, params: dict[str, Any]
) -> None:
    """Delete the chunks of ``collection`` matching ``condition``, keep what an index in
    memory needs to forget them, and take them out of the counts."""
    cur.execute(
        f"""WITH gone AS (
                DELETE FROM fulltext_chunks WHERE collection = %(collection)s AND {condition}
                RETURNING doc, id, length, term_ids
            ), kept AS (
                INSERT INTO fulltext_removed (collection, generation, doc, id, term_ids)
                SELECT %(collection)s, %(generation)s, doc, id, term_ids FROM gone
            )
            SELECT count(*), coalesce(sum(length), 0) FROM gone""",
        {"collection": collection, "generation": generation, **params},
    )
    removed, length = cur.fetchone()
    if not removed:
        return
    cur.execute(
        "UPDATE fulltext_collections SET documents = documents - %s, "
        "total_length = total_length - %s WHERE id = %s",
        (removed, length, collection),
    )
    forgotten = generation - schema.KEEP_GENERATIONS
    if forgotten > 0:
        cur.execute(
            "DELETE FROM fulltext_removed WHERE collection = %s AND generation <= %s",
            (collection, forgotten),
        )
        cur.execute(
            "UPDATE fulltext_collections SET kept_since = greatest(kept_since, %s) WHERE id = %s",
            (forgotten, collection),
        )
