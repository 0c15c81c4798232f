"""An exact BM25 index in memory that grows by segments instead of being rebuilt.

No files and no SQLite here: :class:`SegmentedBM25` is given each document's distinct term
ids and their counts (:class:`DocTerms`; the store keeps them in its database) and answers
top-k queries over the documents it currently holds.

Why segments: bm25s stores each posting's finished score, which depends on the whole
corpus (document count, average length, document frequencies), so one new document makes
it rebuild everything. Here postings hold raw term frequencies and the score is computed
at query time from statistics kept up to date, so:

- adding a batch appends one segment built from the batch alone;
- deleting marks documents dead and takes their terms out of the statistics (their
  postings stay until a merge drops them; queries mask them);
- the newest two segments are merged while the older is at most :data:`MERGE_RATIO` times
  the newer (as in a log-structured merge tree): sizes then shrink geometrically from the
  oldest segment to the newest, there are O(log n) of them, and a posting is copied
  O(log n) times over its life, so adds cost amortised time proportional to the batch;
- when more than :data:`MAX_DEAD_SHARE` of the positions are dead, everything is merged
  and the live documents renumbered.

Scores equal those of ``bm25s.BM25()`` with its defaults (method "lucene", k1=1.5, b=0.75)
over the live documents, computed with the same floating-point steps: idf in float64
rounded to float32, each posting's term score in float64 rounded to float32, summed in
float32 in the order of the query terms.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["K1", "MAX_DEAD_SHARE", "MERGE_RATIO", "B", "DocTerms", "SegmentedBM25"]

#: bm25s's defaults (``BM25()``): the index scores exactly as bm25s did before it.
K1 = 1.5
B = 0.75
#: Merge the two newest segments while the older holds at most this many times the
#: postings of the newer. Larger: fewer merges on add, more segments to visit per query.
MERGE_RATIO = 4
#: Share of dead positions beyond which everything is merged and renumbered.
MAX_DEAD_SHARE = 0.25

_EMPTY_I32 = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True)
class DocTerms:
    """The distinct terms of several documents, flattened: document ``i`` owns the
    ``counts[i]`` entries of ``term_ids``/``freqs`` after those of documents ``0..i-1``."""

    counts: np.ndarray  # int64, one per document
    term_ids: np.ndarray  # int32, distinct within a document
    freqs: np.ndarray  # int32, occurrences of the term in the document (>= 1)

    @classmethod
    def of(cls, docs: Sequence[tuple[np.ndarray, np.ndarray]]) -> DocTerms:
        """From one ``(term_ids, freqs)`` pair of arrays per document."""
        counts = np.fromiter((len(t) for t, _ in docs), dtype=np.int64, count=len(docs))
        if not docs or not counts.any():
            return cls(counts, _EMPTY_I32, _EMPTY_I32)
        term_ids = np.concatenate([t for t, _ in docs]).astype(np.int32, copy=False)
        freqs = np.concatenate([f for _, f in docs]).astype(np.int32, copy=False)
        return cls(counts, term_ids, freqs)

    @classmethod
    def joined(cls, parts: Sequence[DocTerms]) -> DocTerms:
        """The documents of ``parts``, in order, as one."""
        if not parts:
            return cls.of([])
        return cls(
            np.concatenate([p.counts for p in parts]),
            np.concatenate([p.term_ids for p in parts]),
            np.concatenate([p.freqs for p in parts]),
        )

    def __len__(self) -> int:
        return len(self.counts)

    def lengths(self) -> np.ndarray:
        """Each document's length in terms (repeats included), as BM25 counts it."""
        lengths = np.zeros(len(self.counts), dtype=np.int64)
        filled = self.counts > 0
        if filled.any():
            # reduceat sums each document's run; documents without terms are skipped, as
            # reduceat would give them the next document's first count.
            starts = (np.cumsum(self.counts) - self.counts)[filled]
            lengths[filled] = np.add.reduceat(self.freqs, starts, dtype=np.int64)
        return lengths


@dataclass(frozen=True)
class _Segment:
    """Postings of the documents at positions ``[start, stop)``, grouped by term (CSC)."""

    start: int
    stop: int
    terms: np.ndarray  # int32, sorted, distinct: the terms with postings here
    indptr: np.ndarray  # int64: postings of terms[i] are [indptr[i], indptr[i + 1])
    docs: np.ndarray  # int32 positions, increasing within each term
    freqs: np.ndarray  # int32 term frequencies

    @property
    def size(self) -> int:
        return len(self.docs)


def _compress(
    start: int, stop: int, indptr: np.ndarray, docs: np.ndarray, freqs: np.ndarray
) -> _Segment:
    """A segment from a CSC over every term id (``indptr`` of length vocabulary + 1),
    keeping only the terms with postings: a small segment stays small whatever the
    vocabulary."""
    counts = np.diff(indptr)
    terms = np.flatnonzero(counts).astype(np.int32)
    starts = np.concatenate((indptr[:-1][counts > 0], [len(docs)])).astype(np.int64)
    return _Segment(start, stop, terms, starts, docs, freqs)


class SegmentedBM25:
    """Documents (by string id, with a source id each) searchable by BM25, updated in place.

    Not thread-safe: the caller serialises access (:class:`~ragloom.stores.bm25.BM25Store`
    holds a lock).
    """

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        # Per position (a slot given to a document when added, reused only after a
        # compaction): id, source, length in terms, alive or deleted.
        self._ids: list[str] = []
        self._sources: list[str] = []
        self._lengths = np.zeros(0, dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0  # positions in use; the two arrays above may be longer (capacity)
        self._position: dict[str, int] = {}  # live documents only
        self._by_source: dict[str, list[int]] = {}  # may list dead positions (masked)
        # Statistics of the live documents, which the scores use.
        self._df = np.zeros(0, dtype=np.int64)  # documents holding each term id
        self._live = 0
        self._total_length = 0
        self._norms: np.ndarray | None = None  # cached, see _length_norms

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of live documents."""
        return self._live

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._position

    def segment_sizes(self) -> list[int]:
        """Postings per segment, oldest first (for tests and logs)."""
        return [s.size for s in self._segments]

    def document_frequency(self, term_id: int) -> int:
        """How many live documents hold ``term_id``."""
        return int(self._df[term_id]) if 0 <= term_id < len(self._df) else 0

    # -- changes ---------------------------------------------------------------------------

    def add(self, ids: Sequence[str], sources: Sequence[str], terms: DocTerms) -> None:
        """Append documents (one new segment, then merges if due).

        ``ids`` must be new: remove a document before adding its new version.
        """
        n = len(ids)
        if n == 0:
            return
        if len(sources) != n or len(terms) != n:
            raise ValueError("ids, sources and terms must describe the same documents")
        if len(set(ids)) != n or any(i in self._position for i in ids):
            raise ValueError("a document id is repeated or already in the index")
        start, stop = self._size, self._size + n
        self._reserve(stop)
        lengths = terms.lengths()
        self._lengths[start:stop] = lengths
        self._alive[start:stop] = True
        self._size = stop
        for offset, (doc_id, source_id) in enumerate(zip(ids, sources, strict=True)):
            self._position[doc_id] = start + offset
            self._by_source.setdefault(source_id, []).append(start + offset)
        self._ids.extend(ids)
        self._sources.extend(sources)
        if terms.term_ids.size:
            top = int(terms.term_ids.max()) + 1
            # Grown geometrically: most adds bring a few new terms.
            if top > len(self._df):
                grown = np.zeros(max(top, 2 * len(self._df)), dtype=np.int64)
                grown[: len(self._df)] = self._df
                self._df = grown
            self._df += np.bincount(terms.term_ids, minlength=len(self._df))
        self._live += n
        self._total_length += int(lengths.sum())
        self._norms = None
        self._segments.append(self._segment_from_docs(start, stop, terms))
        self._merge_newest()

    def remove(self, docs: Mapping[str, np.ndarray]) -> int:
        """Mark documents dead; ``docs`` maps each id to its distinct term ids (as added).

        Unknown ids are ignored. Returns how many documents were removed.
        """
        removed: list[np.ndarray] = []
        for doc_id, term_ids in docs.items():
            position = self._position.pop(doc_id, None)
            if position is None:
                continue
            self._alive[position] = False
            self._live -= 1
            self._total_length -= int(self._lengths[position])
            removed.append(np.asarray(term_ids, dtype=np.int64))
        if not removed:
            return 0
        gone = np.concatenate(removed)
        if gone.size:
            self._df -= np.bincount(gone, minlength=len(self._df))
        self._norms = None
        dead = self._size - self._live
        if dead > MAX_DEAD_SHARE * self._size:
            self._compact()
        return len(removed)

    # -- search ----------------------------------------------------------------------------

    def search(
        self, term_ids: Iterable[int], k: int, sources: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, score)`` for the query terms, best first, ties by smaller id.

        A repeated term counts once. Only positive scores are returned (every document
        sharing a term with the query scores > 0). ``sources`` keeps only documents of
        those source ids, scoring only them (exact, where filtering a top-k would not be).
        """
        if k <= 0 or self._live == 0 or self._total_length == 0:
            return []
        query = [t for t in dict.fromkeys(term_ids) if self.document_frequency(t) > 0]
        if not query:
            return []
        mask = self._mask(sources)
        if mask is None:
            return []
        scores = self._scores(query)
        scores *= mask  # dead and filtered-out documents score 0 (as bm25s's weight_mask)
        top = _top_k(scores, k, self._ids)
        return [(self._ids[p], float(scores[p])) for p in top]

    def holding_all(
        self, term_ids: Sequence[int], sources: Collection[str] | None = None
    ) -> list[str]:
        """The live documents (of ``sources`` if given) holding every one of ``term_ids``,
        in the order they were added: an intersection of posting lists, no scoring."""
        mask = self._mask(sources)
        if mask is None or not term_ids:
            return []
        for term_id in dict.fromkeys(term_ids):
            if self.document_frequency(term_id) == 0:
                return []
            holds = np.zeros(self._size, dtype=bool)
            for segment in self._segments:
                at = int(np.searchsorted(segment.terms, term_id))
                if at < len(segment.terms) and segment.terms[at] == term_id:
                    holds[segment.docs[segment.indptr[at] : segment.indptr[at + 1]]] = True
            mask = mask & holds
        return [self._ids[p] for p in np.flatnonzero(mask)]

    def _scores(self, query: list[int]) -> np.ndarray:
        """BM25 of every position (dead ones too) for the distinct term ids ``query``."""
        wanted = np.asarray(query, dtype=np.int64)
        docs: list[list[np.ndarray]] = [[] for _ in query]
        freqs: list[list[np.ndarray]] = [[] for _ in query]
        for segment in self._segments:
            if not segment.terms.size:
                continue
            at = np.searchsorted(segment.terms, wanted)
            at = np.minimum(at, len(segment.terms) - 1)
            for hit in np.flatnonzero(segment.terms[at] == wanted):
                lo, hi = segment.indptr[at[hit]], segment.indptr[at[hit] + 1]
                docs[hit].append(segment.docs[lo:hi])
                freqs[hit].append(segment.freqs[lo:hi])
        norms = self._length_norms()
        n = self._live
        scores = np.zeros(self._size, dtype=np.float32)
        for i, term_id in enumerate(query):
            if not docs[i]:
                continue
            positions = docs[i][0] if len(docs[i]) == 1 else np.concatenate(docs[i])
            tf = (freqs[i][0] if len(freqs[i]) == 1 else np.concatenate(freqs[i])).astype(
                np.float64
            )
            df = int(self._df[term_id])
            # bm25s: math.log in float64, kept in a float32 array.
            idf = float(np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5))))
            # bm25s: tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf) in float64, times the
            # float32 idf, stored as float32; then float32 sums over the query terms.
            # In place, and take/add.at rather than fancy indexing, which converts the
            # int32 positions first: three times faster on long posting lists.
            weights = norms.take(positions)
            weights += tf
            np.divide(tf, weights, out=weights)
            weights *= idf
            np.add.at(scores, positions, weights.astype(np.float32))
        return scores

    def _length_norms(self) -> np.ndarray:
        """``k1 * ((1 - b) + b * length / average length)`` per position, as bm25s computes it.

        Cached until the next change (the average moves with every add or delete).
        """
        if self._norms is None:
            average = self._total_length / self._live  # == np.mean of the lengths, exactly
            lengths = self._lengths[: self._size].astype(np.float64)
            self._norms = K1 * ((1 - B) + B * lengths / average)
        return self._norms

    def _mask(self, sources: Collection[str] | None) -> np.ndarray | None:
        """Positions that may be returned (alive, of an allowed source); None: none may."""
        alive = self._alive[: self._size]
        if sources is None:
            return alive
        mask = np.zeros(self._size, dtype=bool)
        for source_id in sources:
            positions = self._by_source.get(source_id)
            if positions:
                mask[positions] = True
        mask &= alive
        return mask if mask.any() else None

    # -- segments --------------------------------------------------------------------------

    @staticmethod
    def _segment_from_docs(start: int, stop: int, terms: DocTerms) -> _Segment:
        """Postings of documents at ``start..stop`` given document by document (CSR):
        scipy transposes them to term by term (CSC) in linear time."""
        if not terms.term_ids.size:
            return _Segment(start, stop, _EMPTY_I32, np.zeros(1, np.int64), _EMPTY_I32, _EMPTY_I32)
        doc_ptr = np.concatenate(([0], np.cumsum(terms.counts)))
        vocabulary = int(terms.term_ids.max()) + 1
        by_doc = sp.csr_matrix(
            (terms.freqs, terms.term_ids, doc_ptr), shape=(stop - start, vocabulary)
        )
        by_term = by_doc.tocsc()  # rows stay increasing within each column
        docs = by_term.indices.astype(np.int32, copy=False)  # a new array: ours to change
        docs += start
        freqs = by_term.data.astype(np.int32, copy=False)
        return _compress(start, stop, by_term.indptr.astype(np.int64), docs, freqs)

    def _merge(self, segments: Sequence[_Segment], renumber: np.ndarray | None = None) -> _Segment:
        """One segment with the postings of adjacent ``segments`` (oldest first), dead
        documents dropped; ``renumber`` maps old positions to new ones (compaction)."""
        terms = np.concatenate([np.repeat(s.terms, np.diff(s.indptr)) for s in segments])
        docs = np.concatenate([s.docs for s in segments])
        freqs = np.concatenate([s.freqs for s in segments])
        keep = self._alive[docs]
        terms, docs, freqs = terms[keep], docs[keep], freqs[keep]
        # Each segment is already sorted by term: a stable sort (timsort) just merges these
        # runs, and keeps positions increasing within a term since segments are in order.
        order = np.argsort(terms, kind="stable")
        terms, docs, freqs = terms[order], docs[order], freqs[order]
        if renumber is not None:
            docs = renumber[docs].astype(np.int32)
        if terms.size:
            starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
        else:
            starts = np.zeros(0, dtype=np.int64)
        indptr = np.concatenate((starts, [len(terms)])).astype(np.int64)
        start, stop = segments[0].start, segments[-1].stop
        if renumber is not None:
            start, stop = 0, self._live
        return _Segment(start, stop, terms[starts].astype(np.int32), indptr, docs, freqs)

    def _merge_newest(self) -> None:
        segments = self._segments
        while len(segments) >= 2 and segments[-2].size <= MERGE_RATIO * segments[-1].size:
            newer = segments.pop()
            older = segments.pop()
            segments.append(self._merge([older, newer]))

    def _compact(self) -> None:
        """Merge every segment and renumber the live documents ``0..live-1``."""
        keep = np.flatnonzero(self._alive[: self._size])
        renumber = np.full(self._size, -1, dtype=np.int64)
        renumber[keep] = np.arange(len(keep))
        merged = self._merge(self._segments, renumber) if self._segments else None
        self._ids = [self._ids[p] for p in keep]
        self._sources = [self._sources[p] for p in keep]
        self._lengths = self._lengths[keep].copy()
        self._alive = np.ones(len(keep), dtype=bool)
        self._size = len(keep)
        self._position = {doc_id: p for p, doc_id in enumerate(self._ids)}
        self._by_source = {}
        for p, source_id in enumerate(self._sources):
            self._by_source.setdefault(source_id, []).append(p)
        self._segments = [merged] if merged is not None else []
        self._norms = None

    def _reserve(self, size: int) -> None:
        if size <= len(self._alive):
            return
        capacity = max(size, 2 * len(self._alive), 1024)
        lengths = np.zeros(capacity, dtype=np.int64)
        alive = np.zeros(capacity, dtype=bool)
        lengths[: self._size] = self._lengths[: self._size]
        alive[: self._size] = self._alive[: self._size]
        self._lengths, self._alive = lengths, alive


def _top_k(scores: np.ndarray, k: int, ids: Sequence[str]) -> list[int]:
    """Positions of the ``k`` highest positive scores, best first, ties by smaller id.

    Positions follow insertion order, not id order, so ties are ordered by the ids
    themselves: the same query always returns the same list, whatever the history.
    """
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        values = scores[candidates]
        kth = np.partition(values, values.size - k)[values.size - k]
        # Keep every candidate tied with the k-th so the cut below is by id.
        candidates = candidates[values >= kth]
    if not candidates.size:
        return []
    keys = np.array([ids[p] for p in candidates.tolist()])
    order = np.lexsort((keys, -scores[candidates]))
    return [int(p) for p in candidates[order[:k]]]
