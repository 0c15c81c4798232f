"""Files of one upload that are read and chunked, waiting to be embedded together.

A page of a manual makes 6 or 7 chunks. Embedded file by file, each page was one or two
short batches of mixed lengths; the chunks of several files embedded in one call are
batched by token length across files, as the raw model is measured (docs/performance.md,
"Indexing throughput"). A group's vectors go to the vector store in one write; each
file's full text is then written, and the file flipped to ``indexed``, on its own, with
its own outcome: grouping changes when a file is embedded and its vectors written, not
what is recorded of it.

:class:`UploadGroups` embeds a full group in a thread of its own while the next group's
files are read and chunked (in the readers sandbox, another process) and the group before
is written to the stores: the model, which holds no GIL while it computes, is kept busy.

A :class:`PreparedFile` holds its source's :class:`~.worklock.WorkLock` and attempt
(:func:`~.attempts.attempt_underway`) until it is finished, so a crash meanwhile leaves
it to the recovery as before. A group that is dropped unfinished (the caller stopped
reading the upload's events: a cancelled job) takes its files out again, since nobody was
told of them: they were never indexed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from types import TracebackType

import numpy as np

from ragloom.schema import Chunk
from ragloom_app.index.base import FileOutcome, IndexingProgress

__all__ = [
    "EMBED_GROUP_CHUNKS",
    "FIRST_GROUP_CHUNKS",
    "LAST_PIECE_MIN_GROUP",
    "LAST_PIECE_SHARE",
    "FileGroup",
    "PreparedFile",
    "StoreVectors",
    "UploadGroups",
]

logger = logging.getLogger(__name__)

#: A group is embedded once it holds this many chunks (or the upload ends). The more
#: chunks, the closer in length each batch's texts and the less padding the model
#: computes: the bundled model embedded a manual's chunks at 39.0 chunks/s in groups of
#: 64, 42.2 of 128, 44.6 of 256, 46.6 all at once (docs/performance.md). 256 is about
#: 6 s of embedding on 2 cores before the first file of a group is reported.
EMBED_GROUP_CHUNKS = 256
#: The first group of an upload is embedded once it holds this many: the model starts
#: after a few files are read rather than twenty, and the first file is reported sooner.
FIRST_GROUP_CHUNKS = 64
#: The files of an upload's last group that hold at least this share of its chunks (the
#: last ones) are embedded apart, while the rest of the group is written: the model is
#: not left idle meanwhile, and only the few files of that piece are written once it is
#: done. Writing a chunk (Chroma, the full text, the database) takes about a seventh of
#: the time the bundled model takes to embed it on 2 cores (2 against 14 ms), so a sixth
#: of the chunks covers the writes of the rest (docs/performance.md).
LAST_PIECE_SHARE = 1 / 6
#: A last group of at most this many chunks is embedded whole: its writes take a few
#: tens of milliseconds.
LAST_PIECE_MIN_GROUP = 32


@dataclass(eq=False)
class PreparedFile:
    """A source whose row says ``indexing``, whose copy is stored and chunks made.

    ``held`` keeps its lock and attempt until :meth:`FileGroup.finished` closes it.
    ``alone``: embedded in a group of its own (a file begun again after a crash, which
    may have been its doing: it must not take the files grouped with it down again).
    """

    source_id: str
    name: str
    digest: str
    chunks: list[Chunk]
    held: contextlib.ExitStack[bool | None]
    span: tuple[float, float] = (0.0, 1.0)  # the upload's progress before and after it
    alone: bool = False


@dataclass
class FileGroup:
    """Prepared files in upload order, until their chunks are embedded and stored."""

    files: list[PreparedFile] = field(default_factory=list)
    first: bool = False  # an upload's first group: FIRST_GROUP_CHUNKS fill it

    @property
    def chunk_count(self) -> int:
        """Chunks of every file in the group."""
        return sum(len(f.chunks) for f in self.files)

    @property
    def full(self) -> bool:
        """Whether the group holds enough chunks to be embedded now."""
        target = min(FIRST_GROUP_CHUNKS, EMBED_GROUP_CHUNKS) if self.first else EMBED_GROUP_CHUNKS
        return self.chunk_count >= target

    def split_last(self) -> FileGroup | None:
        """Take out the last files, those holding at least :data:`LAST_PIECE_SHARE` of the
        group's chunks (at least one file, never all), as a group of their own; ``None``
        for a group of at most :data:`LAST_PIECE_MIN_GROUP` chunks or a single file."""
        total = self.chunk_count
        if len(self.files) < 2 or total <= LAST_PIECE_MIN_GROUP:
            return None
        cut, chunks = len(self.files), 0
        while cut > 1 and chunks < total * LAST_PIECE_SHARE:
            cut -= 1
            chunks += len(self.files[cut].chunks)
        last = FileGroup(self.files[cut:])
        del self.files[cut:]
        return last

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
                _release(prepared, None, None, None)
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
            _release(prepared, exc_type, exc, tb)
        self.files.clear()


def _release(
    prepared: PreparedFile,
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> None:
    """Exit a file's hold; a failure to is logged, so the other files' holds are exited."""
    try:
        prepared.held.__exit__(exc_type, exc, tb)
    except Exception:
        logger.warning("could not release %s", prepared.name, exc_info=True)


#: What :class:`UploadGroups` is given to embed a group's chunks; to write a group's
#: vectors to the vector store at once; and to finish one file with its vectors (or the
#: exception that left it without), told whether they are in the vector store already.
Embed = Callable[[Sequence[Chunk]], np.ndarray]
StoreVectors = Callable[[Sequence[Chunk], np.ndarray], None]
Finish = Callable[[PreparedFile, "np.ndarray | Exception", bool], FileOutcome]

_Event = IndexingProgress | FileOutcome


class UploadGroups:
    """The groups of one upload: one filling while the one before it embeds in a thread.

    :meth:`add` and :meth:`flush` yield the events of the files they finish, in upload
    order; with ``ahead`` false a full group is embedded and finished at once instead. The
    owner calls :meth:`discard` when its caller stops listening, :meth:`abandon` when an
    exception stops the upload, and :meth:`close` in every case.
    """

    def __init__(
        self,
        embed: Embed,
        finish: Finish,
        *,
        ahead: bool = True,
        store_vectors: StoreVectors | None = None,
    ) -> None:
        self._embed = embed
        self._ahead = ahead
        self._finish = finish
        self._store_vectors = store_vectors
        self._filling = FileGroup(first=True)
        self._embedding: tuple[FileGroup, Future[np.ndarray]] | None = None
        self._submitted: list[Future[np.ndarray]] = []  # embeddings not done, in order
        self._unreported = [self._filling]  # every group with files not yet reported

    def holds(self, digest: str) -> bool:
        """Whether a file not yet reported has this content."""
        embedding = self._embedding[0] if self._embedding else None
        return self._filling.holds(digest) or (embedding is not None and embedding.holds(digest))

    def add(self, prepared: PreparedFile) -> Iterator[_Event]:
        """Add a file; once its group is full, start embedding it and finish the one before."""
        self._filling.add(prepared)
        if not self._filling.full:
            return
        if not self._ahead:
            yield from self.flush()
            return
        previous = self._embedding
        self._embedding = yield from self._started(self._filling)
        self._filling = self._new_group()
        if previous is not None:
            yield from self._finished(*previous)

    def flush(self) -> Iterator[_Event]:
        """Finish every file added so far (before an outcome of another file, or at the end).

        The last group starts embedding before the group ahead of it is written to the
        stores, as in :meth:`add`, and its last few files apart
        (:meth:`FileGroup.split_last`): the model is not left idle while those writes run.
        """
        pending = []
        if self._embedding is not None:
            pending.append(self._embedding)
            self._embedding = None
        if self._filling.files:
            group, self._filling = self._filling, self._new_group()
            last = group.split_last() if self._ahead else None
            if last is not None:  # reported after the group, and discarded with it if need be
                self._unreported.insert(self._unreported.index(group) + 1, last)
            pending.append((yield from self._started(group)))
            if last is not None:
                pending.append((yield from self._started(last)))
        for group, vectors in pending:
            yield from self._finished(group, vectors)

    def _started(
        self, group: FileGroup
    ) -> Generator[_Event, None, tuple[FileGroup, Future[np.ndarray]]]:
        files = len(group.files)
        what = f"embedding {group.chunk_count} chunks" + (f" of {files} files" if files > 1 else "")
        yield IndexingProgress(group.files[0].name, group.files[0].span[0], what)
        return group, self._submit([c for f in group.files for c in f.chunks])

    def _submit(self, chunks: list[Chunk]) -> Future[np.ndarray]:
        """Embed ``chunks`` in a daemon thread, after the embedding started before.

        A daemon, unlike a pool's thread, never holds up the interpreter's exit: Ctrl-C
        stops ``ragloom index add`` at once rather than after a large file's embedding.
        """
        future: Future[np.ndarray] = Future()
        self._submitted = [f for f in self._submitted if not f.done()]
        before = self._submitted[-1] if self._submitted else None
        self._submitted.append(future)

        def run() -> None:
            if before is not None:
                wait([before])  # one group at a time, in order
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self._embed(chunks))
            except BaseException as exc:  # handed to the waiting thread
                future.set_exception(exc)

        try:
            threading.Thread(target=run, name="ragloom-embed", daemon=True).start()
        except RuntimeError:  # no new thread while the interpreter stops: embed here
            run()
        return future

    def _finished(self, group: FileGroup, embedding: Future[np.ndarray]) -> Iterator[_Event]:
        """Wait for a group's vectors, then finish and report its files one by one."""
        vectors: np.ndarray | _OneByOne
        try:
            vectors = embedding.result()
        except Exception as exc:
            vectors = _OneByOne(self._embed, exc, len(group.files))
        stored = not isinstance(vectors, _OneByOne) and self._stored(group, vectors)
        offset = 0
        for prepared in list(group.files):
            count = len(prepared.chunks)
            if isinstance(vectors, _OneByOne):
                mine = vectors.vectors(prepared.chunks)
            else:
                mine = vectors[offset : offset + count]
            offset += count
            outcome = self._finish(prepared, mine, stored)
            # Recorded: a stop from here on keeps it, even before the caller hears of it
            # (a reindexed file's old version is gone once the new one is flipped).
            group.finished(prepared)
            yield IndexingProgress(outcome.name, prepared.span[1], outcome.status)
            yield outcome
        self._unreported.remove(group)

    def _stored(self, group: FileGroup, vectors: np.ndarray) -> bool:
        """Write the whole group's vectors in one call, if given a way to: a call costs
        the store some 5 ms whatever its size (embedded Chroma), and a page of a manual
        has a dozen chunks. Each file's row still says ``indexing`` until it is finished
        on its own. A file that fails, or that the caller stops listening for (a cancel),
        has its vectors taken out; a crash or a stop by an exception leaves them, under a
        row that says ``indexing``, for the recovery (at the next start, or ``ragloom
        index check --repair``), which removes what such a source wrote before indexing
        it again. Until then vector hits without a full text are left out of searches.
        ``False`` if the call failed: each file then writes its own, and fails with its
        own reason (vectors a part of the call wrote stay under a failed file only if
        taking them out fails too: ``index check --repair`` deletes those)."""
        if self._store_vectors is None:
            return False
        try:
            self._store_vectors([c for f in group.files for c in f.chunks], vectors)
        except Exception:
            logger.warning("writing a group's vectors at once failed; file by file", exc_info=True)
            return False
        return True

    def _new_group(self) -> FileGroup:
        group = FileGroup()
        self._unreported.append(group)
        return group

    def discard(self, remove: Callable[[str], None]) -> None:
        """The caller stopped listening: take out every file it was not told of."""
        for group in self._unreported:
            group.discard(remove)

    def abandon(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """An exception stops the upload: each unreported file's hold sees it."""
        for group in self._unreported:
            group.abandon(exc_type, exc, tb)

    def close(self) -> None:
        """Drop what is still to embed; a group the thread embeds now is no one's any more."""
        for future in self._submitted:
            future.cancel()  # only those not started; each thread then ends at once
        self._submitted.clear()


class _OneByOne:
    """After a group's embedding failed: each file embedded alone, so that one file the
    model refuses fails alone. Two files in a row failing with the group's kind of error
    mean the model fails whatever it is given (an endpoint down): the rest fail with the
    group's error, untried."""

    def __init__(self, embed: Embed, failure: Exception, files: int) -> None:
        self._embed = embed
        self._failure = failure
        self._trying = files > 1
        self._same_in_a_row = 0

    def vectors(self, chunks: Sequence[Chunk]) -> np.ndarray | Exception:
        """The vectors of one file's chunks, or why there are none."""
        failure = self._failure
        if not self._trying:
            return failure
        try:
            vectors = self._embed(chunks)
        except Exception as exc:
            same = type(exc) is type(failure)
            self._same_in_a_row = self._same_in_a_row + 1 if same else 0
            self._trying = self._same_in_a_row < 2
            return exc
        self._same_in_a_row = 0
        return vectors
