"""Read and chunk one file in the readers sandbox, within the file's budgets.

A reader parses untrusted bytes, often in a native library (pypdf's filters, lxml,
charset detection; plugin readers anything), and the splitter's cost follows the text it
is given. So both run in a worker process of the ``"readers"`` sandbox
(:mod:`ragloom.sandbox`): a reader that crashes, runs out of memory or runs past the
file's time budget fails its own file with a :class:`LoaderError` whose reason says so,
and the app goes on. The chunk budget is checked in the worker, page by page, before any
chunk is sent back, so a reader that returns millions of chunks' worth of text costs the
worker its time, never the app its memory.

What crosses to the worker is plain: the file's path, its reader, the splitter's sizes and
a picklable token counter (:meth:`ragloom.embeddings.Embeddings.token_counter`); the
splitter is built there. A reader that cannot be pickled (a class defined in a function)
fails its files with a reason naming it. A token counter that cannot be pickled (an
embedding model without :meth:`~ragloom.embeddings.Embeddings.token_counter`) makes the
worker read only, and the pages are chunked in the app process, within the same budget.
"""

from __future__ import annotations

import logging
import math
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragloom.loaders import (
    FileBudgetError,
    FileReader,
    LoaderError,
    TextBudget,
    UnsupportedFileTypeError,
    read_file,
)
from ragloom.sandbox import (
    Sandbox,
    SandboxCrash,
    SandboxLimits,
    SandboxMemoryError,
    SandboxRaised,
    SandboxTimeout,
    SandboxTransferError,
    get_sandbox,
)
from ragloom.schema import Chunk, Page
from ragloom.splitters import TokenSplitter
from ragloom.splitters.token import MAX_CHARS_PER_TOKEN

__all__ = [
    "MAX_FILE_CHUNKS",
    "MAX_FILE_SECONDS",
    "MAX_READER_REASON_CHARS",
    "PER_FILE",
    "READERS_LIMITS",
    "READERS_SANDBOX",
    "ChunkingJob",
    "FileBudgetError",
    "ReaderFailedError",
    "chunk_in_sandbox",
    "file_seconds",
    "read_in_sandbox",
    "readers_sandbox",
    "split_within_budget",
    "warm_readers_sandbox",
]

logger = logging.getLogger(__name__)

_MiB = 1 << 20

#: Characters of a reader's reason for refusing a file that are kept (a plugin's reader
#: may quote the whole file); as many as the sandbox keeps of an error it describes.
MAX_READER_REASON_CHARS = 2000

#: Chunks one file may make: a 10,000-page book is about 40,000 chunks of 240 tokens;
#: embedding 50,000 takes minutes, and their vectors and text fit in a laptop's memory.
MAX_FILE_CHUNKS = 50_000
#: Seconds one file may take to be read and chunked: a 96 MB PDF of 20,000 pages of text
#: took 118 s on 2 cores (most of it splitting), so a file at the 200 MB size limit fits,
#: and a reader stuck in a loop holds a worker for five minutes at most.
MAX_FILE_SECONDS = 300.0
#: Seconds any file may take, however small; a larger one has FILE_SECONDS_PER_MB more for
#: each megabyte (up to MAX_FILE_SECONDS), so that a small file made to be slow (a few kB
#: of PDF that unpack to millions of drawing operators) holds a worker for a minute, not
#: five. Real files take far less: 10 MB of text or CSV read and chunked in under 2 s, and
#: PDF at about 1.2 s per MB (the 96 MB above), so the limits leave a wide margin.
MIN_FILE_SECONDS = 60.0
FILE_SECONDS_PER_MB = 5.0
#: How the per-file chunk limit is named in reasons.
PER_FILE = "the limit per file"

READERS_SANDBOX = "readers"
#: The readers sandbox's limits, unless configured otherwise (``configure_sandbox``).
#: 2 GiB of address space: reading and chunking a 96 MB PDF of 20,000 pages of text peaked
#: at 670 MB (VmPeak), so a 200 MB one (the size limit) needs about 1.3 GB. A worker is
#: replaced after 100 files, to hand back what pypdf keeps (reading all 766 pages of
#: SQLite's manual grows a process by 6 MB); each replacement costs some 50 ms of CPU (the
#: fork, the tokenizer built again) that the embedding loses: after 25 files, the pipeline
#: indexed the manual at 0.866 of raw embedding, after 100 at 0.880. 256 MiB of pickled
#: chunks bounds what one file sends back to the app. Workers import the readers and the
#: tokenizer when they start, so a file's time budget is not spent importing them.
READERS_LIMITS = SandboxLimits(
    memory_bytes=2048 * _MiB,
    file_bytes=64 * _MiB,
    result_bytes=256 * _MiB,
    workers=2,
    tasks_per_worker=100,
    preload=("tokenizers", "ragloom.loaders", "ragloom.chunking"),
)


class ReaderFailedError(LoaderError):
    """The reader crashed, raised something that cannot be passed back, or cannot run in a
    worker process."""


@dataclass(frozen=True)
class ChunkingJob:
    """Everything a worker needs to read and chunk one file; all of it pickles.

    ``counter`` ``None`` counts tokens roughly (as the splitter does without one);
    ``read_only`` returns the pages for the caller to chunk. ``chunk_limit_name`` says in
    reasons which limit ``max_chunks`` is (:data:`PER_FILE`, or what an upload has left).
    ``text_budget``, when given, is passed to :func:`read_file` as ``budget``.
    """

    path: Path
    extension: str
    reader: bytes  # pickled apart, so the worker can take the app's import path first
    import_path: tuple[str, ...]
    source_id: str = ""
    source_name: str = ""
    chunk_size: int = 240
    chunk_overlap: int = 36
    max_chars_per_token: int = MAX_CHARS_PER_TOKEN
    counter: Callable[[str], int] | None = None
    read_only: bool = False
    max_chunks: int = MAX_FILE_CHUNKS
    chunk_limit_name: str = PER_FILE
    text_budget: TextBudget | None = None


def readers_sandbox() -> Sandbox:
    """The process's readers sandbox (:data:`READERS_LIMITS` unless configured)."""
    return get_sandbox(READERS_SANDBOX, READERS_LIMITS)


def _warm() -> None:
    """Import what reading and chunking need, so the first file does not pay for it."""
    import tokenizers  # noqa: F401

    from ragloom.loaders import default_readers

    default_readers()


def warm_readers_sandbox(timeout: float = 60.0) -> bool:
    """Start the readers sandbox's workers and their imports (about a second, once).

    Call it at startup, in a thread if the caller must not wait. A failure is logged and
    ``False`` returned: files would then fail with the reason when read, not the start.
    """
    box = readers_sandbox()
    # One call per worker, at once: each worker imports while the others do.
    with ThreadPoolExecutor(max_workers=box.limits.workers) as pool:
        calls = [pool.submit(box.run, _warm, timeout=timeout) for _ in range(box.limits.workers)]
        try:
            for call in calls:
                call.result()
        except Exception:
            logger.warning("the readers sandbox could not be started", exc_info=True)
            return False
    return True


def split_within_budget(
    pages: Sequence[Page],
    splitter: TokenSplitter,
    source_id: str,
    source_name: str,
    max_chunks: int,
    limit_name: str = PER_FILE,
) -> list[Chunk]:
    """``splitter``'s chunks of ``pages``, one page at a time, stopping past ``max_chunks``.

    Raises :class:`FileBudgetError` as soon as the file makes more than ``max_chunks``
    chunks; every page with text makes at least one, which refuses a file of millions of
    pages before any is split.
    """
    if sum(1 for page in pages if not page.text.isspace() and page.text) > max_chunks:
        raise _too_many_chunks(max_chunks, limit_name)
    chunks: list[Chunk] = []
    for page in pages:
        for chunk in splitter([page], source_id=source_id, source_name=source_name):
            # Numbered over the file, as the splitter numbers a file split at once.
            chunks.append(replace(chunk, id=f"{source_id}-{len(chunks):05d}"))
        if len(chunks) > max_chunks:
            raise _too_many_chunks(max_chunks, limit_name)
    return chunks


def _too_many_chunks(max_chunks: int, limit_name: str) -> FileBudgetError:
    return FileBudgetError(f"the file makes more than {max_chunks:,} chunks, {limit_name}")


def run_job(job: ChunkingJob) -> list[Chunk] | list[Page]:
    """Read (and chunk, unless ``read_only``) one file; what a worker runs."""
    # A plugin's reader may come from a folder put on the app's sys.path after this
    # worker started.
    sys.path.extend(entry for entry in job.import_path if entry not in sys.path)
    try:
        reader = pickle.loads(job.reader)
    except Exception as exc:
        raise ReaderFailedError(
            f"the reader for '{job.extension}' files could not be loaded in the readers "
            f"sandbox: {type(exc).__name__}: {exc}"
        ) from None
    try:
        pages = read_file(job.path, {job.extension: reader}, budget=job.text_budget)
    except LoaderError as exc:
        if len(exc.reason) <= MAX_READER_REASON_CHARS:
            raise  # a reason of its own
        # Cut here, where it is still the reader's reason: whole, it could be too large
        # to cross back, and would come back as the reader's failure instead.
        raise LoaderError(exc.reason[: MAX_READER_REASON_CHARS - 1] + "…") from None
    except MemoryError:
        raise  # the sandbox's memory limit
    except Exception as exc:
        # A plugin reader's own error: the file fails with it, like any reader's refusal.
        raise ReaderFailedError(
            f"the reader {type(reader).__name__} failed: {type(exc).__name__}: {exc}"
        ) from None
    if job.read_only:
        return pages
    splitter = TokenSplitter(
        chunk_size=job.chunk_size,
        chunk_overlap=job.chunk_overlap,
        max_chars_per_token=job.max_chars_per_token,
        tokenizer=job.counter,
    )
    return split_within_budget(
        pages, splitter, job.source_id, job.source_name, job.max_chunks, job.chunk_limit_name
    )


def _pickled(value: Any) -> tuple[bytes, str | None]:
    """``value`` pickled, or why it cannot be (then the bytes are empty)."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), None
    except Exception as exc:
        return b"", f"{type(exc).__name__}: {exc}"


def _job(path: Path, readers: Mapping[str, FileReader], **fields: Any) -> ChunkingJob:
    """The job for ``path`` with its reader pickled; refuses a reader that cannot cross."""
    extension = path.suffix.lower()
    reader = readers.get(extension)
    if reader is None:
        raise UnsupportedFileTypeError(extension, readers.keys(), path)
    blob, problem = _pickled(reader)
    if problem:
        raise ReaderFailedError(
            f"the reader {type(reader).__name__} for '{extension}' files cannot run in the "
            f"readers sandbox (it cannot be passed to a worker process: {problem})",
            path,
        )
    return ChunkingJob(path, extension, blob, tuple(sys.path), **fields)


def file_seconds(
    file_size: int, max_seconds: float = MAX_FILE_SECONDS, min_seconds: float = MIN_FILE_SECONDS
) -> float:
    """The seconds a file of ``file_size`` bytes may take to be read and chunked:
    ``min_seconds`` and :data:`FILE_SECONDS_PER_MB` for each megabyte, at most
    ``max_seconds``; whole seconds, rounded up."""
    by_size = math.ceil(FILE_SECONDS_PER_MB * file_size / 1_000_000)
    return min(max_seconds, max(min_seconds, by_size))


def _time_limit(path: Path, max_seconds: float, min_seconds: float) -> tuple[float, str]:
    """The time limit of ``path`` and its name in the reason given past it."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # the reader will say what is wrong with the file
    limit = file_seconds(size, max_seconds, min_seconds)
    if limit >= max_seconds:
        return max_seconds, "the limit per file"
    if limit <= min_seconds:
        return limit, "the limit for a file this small"
    return limit, f"the limit for a file of {size / 1_000_000:.1f} MB"


def _run(
    job: ChunkingJob,
    reader_name: str,
    max_seconds: float,
    min_seconds: float,
    sandbox: Sandbox | None,
) -> Any:
    """Run ``job`` in ``sandbox`` within its file's time limit; the sandbox's failures
    become reasons."""
    box = sandbox or readers_sandbox()
    path = job.path
    limit, limit_name = _time_limit(path, max_seconds, min_seconds)
    try:
        return box.run(run_job, job, timeout=limit)
    except SandboxTimeout:
        raise FileBudgetError(
            f"reading and chunking took longer than {limit:g} s, {limit_name}", path
        ) from None
    except SandboxMemoryError:
        memory = box.limits.memory_bytes
        shown = f"the {memory // _MiB:,} MiB limit per file" if memory else "the memory available"
        raise FileBudgetError(f"reading needed more memory than {shown}", path) from None
    except SandboxCrash as exc:
        raise ReaderFailedError(f"the reader {reader_name} crashed: {exc}", path) from None
    except SandboxRaised as exc:
        raise ReaderFailedError(f"the reader {reader_name} failed: {exc}", path) from None
    except SandboxTransferError as exc:
        raise ReaderFailedError(
            f"the reader {reader_name} could not run in the readers sandbox: {exc}", path
        ) from None


def read_in_sandbox(
    path: Path,
    reader: FileReader,
    *,
    max_seconds: float = MAX_FILE_SECONDS,
    min_seconds: float = MIN_FILE_SECONDS,
    text_budget: TextBudget | None = None,
    sandbox: Sandbox | None = None,
) -> list[Page]:
    """The pages ``reader`` reads from ``path``, read in ``sandbox`` as the app reads files.

    Raises what :func:`chunk_in_sandbox` raises.
    """
    path = Path(path)
    job = _job(path, {path.suffix.lower(): reader}, read_only=True, text_budget=text_budget)
    result = _run(job, type(reader).__name__, max_seconds, min_seconds, sandbox)
    return result  # type: ignore[no-any-return]


def chunk_in_sandbox(
    path: Path,
    readers: Mapping[str, FileReader],
    splitter: TokenSplitter,
    source_id: str,
    source_name: str,
    *,
    max_chunks: int = MAX_FILE_CHUNKS,
    max_seconds: float = MAX_FILE_SECONDS,
    min_seconds: float = MIN_FILE_SECONDS,
    chunk_limit_name: str = PER_FILE,
    text_budget: TextBudget | None = None,
    sandbox: Sandbox | None = None,
) -> list[Chunk]:
    """The chunks of ``path``, read by its reader in ``readers`` and split by ``splitter``.

    Reading and chunking run in ``sandbox`` (default: :func:`readers_sandbox`) and are
    stopped after :func:`file_seconds` (``min_seconds`` to ``max_seconds``). Raises a
    :class:`LoaderError` with a reason: the reader's own, :class:`FileBudgetError` past a
    budget, :class:`ReaderFailedError` for a reader that crashed or cannot run there.
    """
    path = Path(path)
    counter = splitter.tokenizer
    if type(splitter) is not TokenSplitter:
        # A subclass splits its own way: the worker could only rebuild the base class.
        read_only = True
        logger.info("%s: %s splits in this process", source_name, type(splitter).__name__)
    elif counter is not None and _pickled(counter)[1] is not None:
        read_only = True
        logger.info("%s: the token counter cannot cross to a worker; chunking here", source_name)
    else:
        read_only = False
    job = _job(
        path,
        readers,
        source_id=source_id,
        source_name=source_name,
        chunk_size=int(splitter.chunk_size),
        chunk_overlap=int(splitter.chunk_overlap),
        max_chars_per_token=int(splitter.max_chars_per_token),
        counter=None if read_only else counter,
        read_only=read_only,
        max_chunks=max_chunks,
        chunk_limit_name=chunk_limit_name,
        text_budget=text_budget,
    )
    reader_name = type(readers[job.extension]).__name__
    result = _run(job, reader_name, max_seconds, min_seconds, sandbox)
    if not read_only:
        return result  # type: ignore[no-any-return]
    return split_within_budget(
        result, splitter, source_id, source_name, max_chunks, chunk_limit_name
    )
