"""Every host this process resolves or connects to, recorded through one audit hook.

An audit hook cannot be removed once added, so one is added for the whole process, the
first time a test asks, and records only inside :func:`recorded_hosts`. It records the
attempts rather than relying on them failing: where an outbound proxy is set up, a connect
to a public host may succeed.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["recorded_hosts"]


class _HostRecorder:
    """The audit hook: it keeps what it needs as attributes, not module globals, because it
    still runs while the interpreter exits and tears the modules down."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hosts: list[str] | None = None
        self.installed = False

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if self.hosts is None or event not in ("socket.connect", "socket.getaddrinfo"):
            return
        if event == "socket.connect":
            sock, address = args[0], args[1]
            if isinstance(sock, socket.socket) and sock.family == socket.AF_UNIX:
                host = f"unix:{address!s}"  # a file of this machine, named as such
            else:
                host = str(address[0] if isinstance(address, tuple) else address)
        else:
            host = str(args[0])
        with self.lock:
            if self.hosts is not None:
                self.hosts.append(host)


_RECORDER = _HostRecorder()


@contextmanager
def recorded_hosts() -> Iterator[list[str]]:
    """The hosts (names or addresses; ``unix:<path>`` for a Unix socket) that the process
    resolves or connects to while the block runs, in order, repeats kept. Not reentrant."""
    with _RECORDER.lock:
        if not _RECORDER.installed:
            sys.addaudithook(_RECORDER)
            _RECORDER.installed = True
        _RECORDER.hosts = hosts = []
    try:
        yield hosts
    finally:
        with _RECORDER.lock:
            _RECORDER.hosts = None
