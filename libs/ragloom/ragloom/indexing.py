"""Turn a file into chunks and write them to a vector store and a full-text store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from theflow import Param

from ragloom.base import BaseComponent
from ragloom.chunking import (
    MAX_FILE_CHUNKS,
    MAX_FILE_SECONDS,
    MIN_FILE_SECONDS,
    PER_FILE,
    chunk_in_sandbox,
)
from ragloom.embeddings import Embeddings, EmbeddingsError
from ragloom.loaders import FileReader, TextBudget, default_readers
from ragloom.schema import Chunk
from ragloom.splitters import TokenSplitter
from ragloom.stores import FullTextStore, VectorStore

__all__ = ["FileIngestor"]


class FileIngestor(BaseComponent):
    """Read, split, embed and store one file. Reading errors are :class:`LoaderError`.

    :meth:`chunk` and :meth:`store` are separate so a caller can record the chunks (or
    refuse the file) before anything reaches the stores; :meth:`store` is :meth:`embed`
    then :meth:`write`, separate too so that the chunks of several small files can be
    embedded in one call. Reading and chunking run in the readers sandbox
    (:mod:`ragloom.chunking`), within ``max_chunks`` and the file's time limit (from
    ``min_seconds`` to ``max_seconds``, by its size); embedding and storing run here.
    """

    splitter: TokenSplitter = Param(
        help="Splits pages into token-sized chunks; its tokenizer must pickle "
        "(Embeddings.token_counter()) to be used in the sandbox."
    )
    embeddings: Embeddings = Param(help="Embeds chunks for the vector store.")
    vector_store: VectorStore = Param(help="Where chunk vectors go.")
    fulltext_store: FullTextStore = Param(help="Where chunk terms go.")
    readers: Mapping[str, FileReader] | None = Param(
        None, help="Readers by extension; None for the defaults."
    )
    max_chunks: int = Param(MAX_FILE_CHUNKS, help="Most chunks one file may make.")
    max_seconds: float = Param(MAX_FILE_SECONDS, help="Most seconds to read and chunk a file.")
    min_seconds: float = Param(
        MIN_FILE_SECONDS, help="Seconds any file may take, however small (chunking.file_seconds)."
    )
    text_budget: TextBudget | None = Param(
        None, help="The page-text budget of every file (None: TextBudget's defaults)."
    )

    def chunk(
        self,
        path: Path,
        source_id: str,
        source_name: str,
        *,
        max_chunks: int | None = None,
        chunk_limit_name: str = PER_FILE,
    ) -> list[Chunk]:
        """Read ``path`` and split it; raises ``LoaderError`` for a file it cannot read.

        ``max_chunks`` (default: the ingestor's) may be lower, e.g. what an upload's budget
        has left; ``chunk_limit_name`` names that limit in the reason.
        """
        return chunk_in_sandbox(
            Path(path),
            self.readers if self.readers is not None else default_readers(self.text_budget),
            self.splitter,
            source_id,
            source_name,
            max_chunks=int(self.max_chunks) if max_chunks is None else max_chunks,
            max_seconds=float(self.max_seconds),
            min_seconds=float(self.min_seconds),
            chunk_limit_name=chunk_limit_name,
            text_budget=self.text_budget,
        )

    def store(self, chunks: Sequence[Chunk]) -> None:
        """Embed ``chunks`` and write them to both stores."""
        self.write(chunks, self.embed(chunks))

    def embed(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """One vector per chunk, in order; raises ``EmbeddingsError`` if the model gives
        another number of rows (a plugin's model: rows would go to the wrong chunks)."""
        if not chunks:
            return np.empty((0, 0), dtype=np.float32)
        vectors = np.asarray(self.embeddings.embed_documents([c.text for c in chunks]))
        if vectors.ndim != 2 or len(vectors) != len(chunks):
            raise EmbeddingsError(
                f"the embedding model returned {vectors.shape[0] if vectors.ndim else 0} "
                f"vectors for {len(chunks)} chunks"
            )
        return vectors

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Write ``chunks`` with their ``vectors`` (from :meth:`embed`) to both stores:
        :meth:`write_vectors`, then :meth:`write_fulltext`."""
        self.write_vectors(chunks, vectors)
        self.write_fulltext(chunks)

    def write_vectors(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Write ``chunks`` with their ``vectors`` to the vector store only (several
        files' chunks may go in one call: a call costs a store more than a chunk does)."""
        if chunks:
            self.vector_store.add(chunks, vectors)

    def write_fulltext(self, chunks: Sequence[Chunk]) -> None:
        """Write ``chunks`` to the full-text store only (their vectors written already)."""
        if chunks:
            self.fulltext_store.add(chunks)

    def run(self, path: Path, source_id: str, source_name: str) -> list[Chunk]:
        """Read, split, embed and store a file; returns its chunks."""
        chunks = self.chunk(path, source_id, source_name)
        self.store(chunks)
        return chunks
