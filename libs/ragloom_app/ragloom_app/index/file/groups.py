"""Files of one upload that are read and chunked, waiting to be embedded together.

A page of a manual makes 6 or 7 chunks. Embedded file by file, each page was one or two
short batches of mixed lengths; the chunks of several files embedded in one call are
batched by token length across files, as the raw model is measured (docs/performance.md,
"Indexing throughput"). Each file is still written to the stores and flipped to
``indexed`` on its own, with its own outcome: grouping changes when a file is embedded,
not what is recorded of it.

A :class:`PreparedFile` holds its source's :class:`~.worklock.WorkLock` and attempt
(:func:`~.attempts.attempt_underway`) until it is finished, so a crash meanwhile leaves
it to the recovery as before. A group that is dropped unfinished (the caller stopped
reading the upload's events: a cancelled job) takes its files out again, since nobody was
told of them: they were never indexed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from ragloom.schema import Chunk

__all__ = ["EMBED_GROUP_CHUNKS", "FileGroup", "PreparedFile"]

logger = logging.getLogger(__name__)

#: A group is embedded once it holds this many chunks (or the upload ends). 64: eight
#: batches of the bundled model's onnx size, enough for batches of similar lengths,
#: and a few seconds at most before the first file of a group is reported.
EMBED_GROUP_CHUNKS = 64


@dataclass(eq=False)
class PreparedFile:
    """A source whose row says ``indexing``, whose copy is stored and chunks made.

    ``held`` keeps its lock and attempt until :meth:`FileGroup.finished` closes it.
    """

    source_id: str
    name: str
    digest: str
    chunks: list[Chunk]
    held: contextlib.ExitStack[bool | None]
    span: tuple[float, float] = (0.0, 1.0)  # the upload's progress before and after it


@dataclass
class FileGroup:
    """Prepared files in upload order, until their chunks are embedded and stored."""

    files: list[PreparedFile] = field(default_factory=list)

    @property
    def chunk_count(self) -> int:
        """Chunks of every file in the group."""
        return sum(len(f.chunks) for f in self.files)

    @property
    def full(self) -> bool:
        """Whether the group holds enough chunks to be embedded now."""
        return self.chunk_count >= EMBED_GROUP_CHUNKS

    def holds(self, digest: str) -> bool:
        """Whether a file of the group has this content (the next copy must wait for it)."""
        return any(f.digest == digest for f in self.files)

    def add(self, prepared: PreparedFile) -> None:
        """Append a file, to be embedded with the others."""
        self.files.append(prepared)

    def finished(self, prepared: PreparedFile) -> None:
        """``prepared`` is recorded (indexed or failed) and reported: drop its hold."""
        self.files.remove(prepared)
        prepared.held.close()

    def discard(self, remove: Callable[[str], None]) -> None:
        """The caller stopped before hearing of these files: ``remove`` each source."""
        for prepared in self.files:
            try:
                remove(prepared.source_id)
            except Exception:
                logger.warning(
                    "could not take out %s; the recovery will", prepared.name, exc_info=True
                )
            finally:
                prepared.held.close()
        self.files.clear()

    def abandon(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """An exception stops the upload: each file's hold sees it, as a ``with`` would
        (a stop takes its attempt back; a crash leaves the file to the recovery)."""
        for prepared in self.files:
            prepared.held.__exit__(exc_type, exc, tb)
        self.files.clear()
