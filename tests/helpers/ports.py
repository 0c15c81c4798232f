"""Free loopback ports for the servers tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (bound once, then released).

    Another process may take it before the caller binds it; the servers' helpers wait
    for their own server to answer, so such a race shows as a clear start-up failure.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
