"""Debian's haproxy on loopback in front of app processes, for the tests of several of them
behind one address."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.ports import free_port

__all__ = ["SERVED_BY", "haproxy_bin", "haproxy_in_front"]

SERVED_BY = "X-Served-By"
"""The response header naming the app process that answered (``app0``, ``app1``, ...)."""

# Round robin for API clients; a browser is kept on one process by a cookie, because
# gradio keeps its sessions in the process that made them (docs/deploy.md).
_CONFIG = """
global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend ragloom
    bind 127.0.0.1:{port}
    default_backend apps
backend apps
    balance roundrobin
    cookie RAGLOOM_APP insert indirect nocache httponly
    http-response set-header {header} %[srv_name]
{servers}
"""


def haproxy_bin() -> str | None:
    """The haproxy program, if it is installed (``scripts/ensure-haproxy``)."""
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy",) if Path(p).exists()), None
    )


@contextmanager
def haproxy_in_front(backends: Sequence[int]) -> Iterator[int]:
    """haproxy on a free loopback port in front of the apps on ``backends``; its port."""
    program = haproxy_bin()
    if program is None:
        raise FileNotFoundError("haproxy is not installed (Debian: haproxy)")
    port = free_port()
    servers = "\n".join(
        f"    server app{n} 127.0.0.1:{backend} cookie app{n}" for n, backend in enumerate(backends)
    )
    with tempfile.TemporaryDirectory(prefix="ragloom-haproxy-") as folder:
        config = Path(folder) / "haproxy.cfg"
        config.write_text(
            _CONFIG.format(port=port, header=SERVED_BY, servers=servers), encoding="utf-8"
        )
        log = (Path(folder) / "haproxy.log").open("wb")
        process = subprocess.Popen(
            [program, "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, (Path(folder) / "haproxy.log").read_text()
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert time.monotonic() < deadline, "haproxy did not listen within 30 s"
                time.sleep(0.05)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
