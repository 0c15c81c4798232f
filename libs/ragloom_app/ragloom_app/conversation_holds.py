"""Which answer holds a conversation while it is written there, and whether that hold is
left over from an answer that no longer runs.

A hold is named ``host:pid:start:hold``: the machine, the process, a random mark the
process drew when it first held one, and a mark of this hold. A hold is taken over at
once by the next question, instead of lapsing only at its time (the answer deadline and a
minute), when it is known to be left over:

- its process died on this machine (a crash, then a restart: the conversation goes on);
- it names this process's pid with another start (the same pid after a restart, as a
  container's first process always is), or no start (an older release's hold);
- it is this process's, but no answer of this process holds it any more: its release
  failed (the database away just then).

A hold of this process that an answer holds is never taken over, whatever the moment:
the hold is live from before it is written until after it is released. A hold of another
machine's process lapses at its time.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["holder", "is_of_this_machine", "is_stale", "live_hold"]

_START: dict[int, str] = {}  # pid -> this process's mark (a forked child draws its own)
_LIVE: set[str] = set()  # the holds this process's answers hold now
_LOCK = threading.Lock()


def holder() -> str:
    """This process, as its holds name it (``host:pid:start``)."""
    pid = os.getpid()
    with _LOCK:
        start = _START.setdefault(pid, f"s{secrets.token_hex(8)}")
    return f"{socket.gethostname()}:{pid}:{start}"


@contextmanager
def live_hold() -> Iterator[str]:
    """A new hold's name, live in this process for the block: write it as the hold, and
    release the hold before the block ends."""
    name = f"{holder()}:h{secrets.token_hex(8)}"
    with _LOCK:
        _LIVE.add(name)
    try:
        yield name
    finally:
        with _LOCK:
            _LIVE.discard(name)


def is_stale(holder_id: str | None) -> bool:
    """Whether the hold ``holder_id`` is left over (see the module docstring)."""
    host, pid_text, start, _ = _parts(holder_id or "")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's, or an old row's: it lapses at its time
    pid = int(pid_text)
    if pid == os.getpid():
        if f"{host}:{pid}:{start}" != holder():
            return True  # this pid's earlier life, or an older release's
        with _LOCK:
            return holder_id not in _LIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # running, as another user
        return False
    return False


def is_of_this_machine(holder_id: str) -> bool:
    """Whether the hold ``holder_id`` is a process's of this machine."""
    return _parts(holder_id)[0] == socket.gethostname()


def _parts(holder_id: str) -> tuple[str, str, str, str]:
    """``(host, pid, start, hold)`` of a hold's name, ``""`` for a part it lacks (an older
    release named ``host:pid``). A host name holds no ``:``."""
    host, _, rest = holder_id.partition(":")
    pid_text, _, marks = rest.partition(":")
    start, _, hold = marks.partition(":")
    return host, pid_text, start, hold
