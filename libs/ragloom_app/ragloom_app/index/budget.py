"""The budget of one upload: bytes and chunks shared by all its files.

One call of :meth:`FileIndexingPipeline.stream` is one upload (a UI upload, or one
``ragloom index add``). Its files, and what its archives unpack to, spend the bytes; the
chunks its files make spend the chunks. A file that does not fit in what is left fails
with the reason, and so does every file after the budget is used up; files already
indexed stay indexed. A content that failed on a budget of its own (the time, memory,
text or chunks one file may take) fails at once for each copy of it later in the upload:
a zip of a hundred copies of a file that takes the whole time limit costs that time once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePath

from ragloom.byte_sizes import size_text
from ragloom.chunking import PER_FILE

__all__ = ["MAX_UPLOAD_BYTES", "MAX_UPLOAD_CHUNKS", "UploadBudget"]

#: 2 GiB: ten files at the 200 MB limit, or a folder of a few hundred ordinary documents;
#: a laptop's disk takes the stored copies, and the chunk budget bounds the indexing work.
MAX_UPLOAD_BYTES = 2 << 30
#: 100,000 chunks: about 24 million tokens, 40 minutes of embedding on 2 cores with the
#: bundled model, about 1 GB in Chroma, the database and BM25 together.
MAX_UPLOAD_CHUNKS = 100_000


@dataclass
class UploadBudget:
    """What one upload may still spend (one upload's files are indexed one at a time)."""

    max_bytes: int = MAX_UPLOAD_BYTES
    max_chunks: int = MAX_UPLOAD_CHUNKS
    bytes_spent: int = 0
    chunks_spent: int = 0
    over_budget: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """The contents (sha256, and the extension they were read as) that failed on a budget
    of a file, with the reason and the name of the file that did."""

    @property
    def bytes_left(self) -> int:
        """Bytes the upload may still spend (never negative)."""
        return max(self.max_bytes - self.bytes_spent, 0)

    @property
    def chunks_left(self) -> int:
        """Chunks the upload may still make (never negative)."""
        return max(self.max_chunks - self.chunks_spent, 0)

    def _bytes_name(self) -> str:
        return (
            f"the upload's budget of {size_text(self.max_bytes)} "
            "(its files and what its archives unpack to)"
        )

    def _chunks_name(self) -> str:
        return f"the upload's budget of {self.max_chunks:,} chunks"

    def used_up(self) -> str | None:
        """Why no more file of this upload can be indexed, or ``None``."""
        if self.bytes_left == 0:
            return f"{self._bytes_name()} is used up; add this file in another upload"
        if self.chunks_left == 0:
            return f"{self._chunks_name()} is used up; add this file in another upload"
        return None

    def spend_bytes(self, n_bytes: int, what: str = "this file") -> str | None:
        """Spend ``n_bytes``, or say why they do not fit (and spend nothing)."""
        if n_bytes > self.bytes_left:
            return (
                f"{self._bytes_name()} has {size_text(self.bytes_left)} left, less than "
                f"the {size_text(n_bytes)} of {what}; add it in another upload"
            )
        self.bytes_spent += n_bytes
        return None

    def spend_file(self, path: Path) -> str | None:
        """Spend an uploaded file's bytes, or say why it is refused (and spend nothing)."""
        return self.used_up() or self.spend_bytes(path.stat().st_size)

    def chunk_limit(self, per_file: int) -> tuple[int, str]:
        """The chunks the next file may make, and that limit's name for a reason.

        The smaller of ``per_file`` (:data:`~ragloom.chunking.PER_FILE`) and what is left.
        """
        left = self.chunks_left
        if left >= per_file:
            return per_file, PER_FILE
        return left, f"what is left of {self._chunks_name()}"

    def spend_chunks(self, n_chunks: int) -> None:
        """Spend the chunks a file made (it fit: :meth:`chunk_limit` bounded it)."""
        self.chunks_spent += n_chunks

    def note_over_budget(self, digest: str, name: str, reason: str) -> None:
        """Remember that the content ``digest`` (the file ``name``) failed on a budget."""
        self.over_budget.setdefault(_read_as(digest, name), (reason, name))

    def failed_before(self, digest: str, name: str) -> str | None:
        """Why a copy of the content ``digest``, read as ``name`` is, fails at once (it
        failed on a budget earlier in this upload, read by the same reader), or ``None``."""
        earlier = self.over_budget.get(_read_as(digest, name))
        if earlier is None:
            return None
        reason, name = earlier
        return f"{reason} (as {name!r}, the same content, earlier in this upload)"


def _read_as(digest: str, name: str) -> tuple[str, str]:
    """A content as one reader reads it: the reader goes by the name's extension, and the
    same bytes may be over a budget as JSON and well within it as text."""
    return digest, PurePath(name).suffix.lower()
