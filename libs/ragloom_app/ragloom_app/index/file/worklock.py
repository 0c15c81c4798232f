"""Mark work on disk (a file being indexed, a temporary folder) as owned by a live process.

A source row in status ``indexing`` means either "a process is indexing it right now" or
"the process indexing it died". Only the second may be cleaned up, and a UI indexing in
one process must survive ``ragloom index list`` started in another. So the worker holds
an exclusive ``flock`` on ``<folder>/<key>.lock`` for as long as it works: the kernel drops
the lock when the process exits, however it exits (SIGKILL included), so "I can take the
lock" reliably means "nobody is working on it".

flock locks belong to an open file description, so two threads of one process that open
the file separately exclude each other as two processes do.

Lock files are seen only by the processes that share the data folder. App processes with
data folders of their own share the database: :class:`WorkLocks` with ``shared`` locks
(PostgreSQL advisory locks, :class:`~ragloom_app.db.advisory.AdvisoryLocks`) takes each
lock there too, after its file, so that any process of the deployment tells a live
holder from a dead one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Protocol

__all__ = ["SharedLocks", "WorkLock", "WorkLocks", "clear_if_free", "is_busy"]

logger = logging.getLogger(__name__)

#: How long a blocking :meth:`WorkLock.acquire` waits between two tries of a shared lock.
_SHARED_POLL_SECONDS = 0.05


class SharedLocks(Protocol):
    """Named exclusive locks that every process of a deployment sees, released by the
    server when their holder dies (:class:`~ragloom_app.db.advisory.AdvisoryLocks`)."""

    def try_acquire(self, name: str) -> bool:
        """Take ``name`` if nobody holds it; whether it was taken."""
        ...

    def release(self, name: str) -> None:
        """Let go of ``name`` (nothing if it is not held here)."""
        ...

    def is_held(self, name: str) -> bool:
        """Whether any process holds ``name``."""
        ...


class WorkLock:
    """An exclusive lock on one piece of work, named ``key`` inside ``folder``; with
    ``shared``, also the lock ``shared_name`` there, taken after the file and let go of
    before it. ``shared_name`` is the work's name across the deployment: ``key`` names
    it in one index's folder only (see :class:`WorkLocks`)."""

    def __init__(
        self, folder: Path, key: str, shared: SharedLocks | None = None, shared_name: str = ""
    ) -> None:
        if shared is not None and not shared_name:
            raise ValueError(f"the shared lock of {key!r} needs its name across the deployment")
        self.path = folder / f"{key}.lock"
        self._fd: int | None = None
        self._shared = shared
        self._shared_name = shared_name

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, *, blocking: bool = True) -> bool:
        """Take the lock; without ``blocking``, return ``False`` at once if someone holds it."""
        if self._fd is not None:
            return True
        if not self._acquire_file(blocking):
            return False
        return self._acquire_shared(blocking)

    def _acquire_shared(self, blocking: bool) -> bool:
        """Take the shared lock, the file's held; without it, let go of the file too."""
        if self._shared is None:
            return True
        try:
            # The file first: of this folder's processes, only its holder tries the shared
            # lock, so waiting for it means waiting for another folder's process.
            while not self._shared.try_acquire(self._shared_name):
                if not blocking:
                    self._release_file(keep_file=False)
                    return False
                time.sleep(_SHARED_POLL_SECONDS)
        except BaseException:
            self._release_file(keep_file=False)
            raise
        return True

    def _acquire_file(self, blocking: bool) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            if self._is_current(fd):
                self._fd = fd
                return True
            # Between our open and our lock, the holder released and removed the file: our
            # lock is on an inode nobody else will ever open, so take the path's new file.
            os.close(fd)

    def _is_current(self, fd: int) -> bool:
        """Whether ``fd`` is the file at :attr:`path` (not one unlinked or replaced)."""
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def acquire_new(self) -> None:
        """Take the lock on a file made for it, that nobody can see unlocked: the file
        :meth:`acquire` makes is free to anyone who looks between its creation and its
        lock, which for a mark of unfinished work (an import's) reads as "abandoned".
        Then the shared lock, waiting for it (work just begun: nobody else's)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        made = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        fd = os.open(made, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.replace(made, self.path)  # appears locked already
        except BaseException:
            os.close(fd)
            made.unlink(missing_ok=True)
            raise
        self._fd = fd
        self._acquire_shared(blocking=True)

    def release(self, *, keep_file: bool = False) -> None:
        """Drop the lock and remove its file (unless another lock file replaced it, or
        ``keep_file``: the file, nobody holding it, then marks work left unfinished)."""
        if self._fd is not None and self._shared is not None:
            try:
                self._shared.release(self._shared_name)
            finally:
                self._release_file(keep_file=keep_file)
        else:
            self._release_file(keep_file=keep_file)

    def _release_file(self, *, keep_file: bool) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if keep_file:
            os.close(fd)
            return
        try:
            # Someone who opened the file before this unlink then locks a removed inode;
            # :meth:`acquire` sees that and starts over on the path. Only our own inode is
            # unlinked, never a newer file at the same path.
            if self._is_current(fd):
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        finally:
            os.close(fd)

    def __enter__(self) -> WorkLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def is_busy(folder: Path, key: str) -> bool:
    """Whether a live process holds the lock ``key`` (creates nothing on disk)."""
    path = folder / f"{key}.lock"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing also drops a lock taken just above
    return False


def clear_if_free(folder: Path, key: str) -> bool:
    """Remove the lock file ``key`` if no live process holds it (one killed while it held
    it left the file behind); whether it was free."""
    lock = WorkLock(folder, key)
    if not lock.acquire(blocking=False):
        return False
    lock.release()
    return True


class WorkLocks:
    """The work locks of one index in one data folder: files in ``folder`` and, with
    ``shared``, locks every process of the deployment sees, named ``<scope>/<key>``
    (``scope`` tells one index's keys, such as a content hash, from another's)."""

    def __init__(self, folder: Path, shared: SharedLocks | None = None, scope: str = "") -> None:
        self.folder = folder
        self.shared = shared
        self.scope = scope

    def lock(self, key: str) -> WorkLock:
        """The lock ``key``, not taken yet."""
        return WorkLock(self.folder, key, self.shared, f"{self.scope}/{key}")

    def is_busy(self, key: str) -> bool:
        """Whether a live process, of this data folder or another, holds the lock ``key``."""
        if is_busy(self.folder, key):
            return True
        return self.shared is not None and self.shared.is_held(f"{self.scope}/{key}")

    def wait_until_free(self, key: str, timeout: float, poll: float = 0.1) -> bool:
        """Wait until no live process holds the lock ``key``, for ``timeout`` seconds at
        most; whether it is free. Polled, taking nothing."""
        deadline = time.monotonic() + timeout
        while self.is_busy(key):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll, left))
        return True
