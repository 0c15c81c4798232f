"""Which process holds a conversation while it writes an answer there, and whether that
process has died.

A hold names its process: ``host:pid:start``, ``start`` a random mark this process drew
when it first held one. One whose process died on this machine is taken over at once by
the next question, instead of lapsing only at its time (the answer deadline and a
minute): after a crash and a restart the conversation goes on. That is a process no longer
running, or one with this process's pid but another start (the same pid after a restart,
as a container's first process always is). A hold of this very process is never taken
over: two of its answers in one conversation are one too many, whatever the moment. A
hold of another machine's process still lapses at its time.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading

__all__ = ["holder", "is_stale"]

_START: dict[int, str] = {}  # pid -> this process's mark (a forked child draws its own)
_START_LOCK = threading.Lock()


def holder() -> str:
    """This process, as a hold names it."""
    pid = os.getpid()
    with _START_LOCK:
        start = _START.setdefault(pid, f"s{secrets.token_hex(8)}")  # never all digits
    return f"{socket.gethostname()}:{pid}:{start}"


def is_stale(holder_id: str | None) -> bool:
    """Whether the hold of ``holder_id`` is a dead process's (on this machine)."""
    host, pid_text, start = _parts(holder_id or "")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's, or an old row's: it lapses at its time
    pid = int(pid_text)
    if pid == os.getpid():
        return f"{host}:{pid}:{start}" != holder()  # this pid's earlier life, or this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # running, as another user
        return False
    return False


def _parts(holder_id: str) -> tuple[str, str, str]:
    """``(host, pid, start)`` of a hold; ``start`` is empty in one of a release that
    named no start (``host:pid``)."""
    head, _, last = holder_id.rpartition(":")
    if last.isdigit():
        return head, last, ""
    host, _, pid_text = head.rpartition(":")
    return host, pid_text, last
