"""Which process holds a conversation while it writes an answer there, and whether that
process has died.

A hold names its process (``host:pid``). One whose process died on this machine is taken
over at once by the next question, instead of lapsing only at its time (the answer
deadline and a minute): after a crash and a restart the conversation goes on. That is a
process no longer running, or one of this process's own id that this process does not
hold (the same pid after a restart, as a container's first process always is). A hold of
another machine's process still lapses at its time.
"""

from __future__ import annotations

import os
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["held_here", "holder", "is_stale"]

# The conversations this process holds now, with how many of its answers hold each (one
# that outlived its hold and the one that took it after may overlap).
_HELD: Counter[str] = Counter()
_HELD_LOCK = threading.Lock()


def holder() -> str:
    """This process, as a hold names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_stale(holder_id: str | None, conversation_id: str) -> bool:
    """Whether the hold of ``holder_id`` on ``conversation_id`` is a dead process's."""
    host, _, pid_text = (holder_id or "").rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's, or an old row's: it lapses at its time
    pid = int(pid_text)
    if pid == os.getpid():
        with _HELD_LOCK:
            return _HELD[conversation_id] == 0
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # running, as another user
        return False
    return False


@contextmanager
def held_here(conversation_id: str) -> Iterator[None]:
    """Note that this process holds ``conversation_id`` for the block."""
    with _HELD_LOCK:
        _HELD[conversation_id] += 1
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD[conversation_id] -= 1
            if not _HELD[conversation_id]:
                del _HELD[conversation_id]
