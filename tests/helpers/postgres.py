"""A throwaway PostgreSQL cluster on loopback, for the tests against a real server.

Debian's ``postgresql`` server binaries (``/usr/lib/postgresql/<version>/bin``) make a
cluster in a temporary folder, listening on 127.0.0.1 at a free port only, without fsync
(nothing outlives the test run). PostgreSQL refuses to run as root: as root, the cluster
belongs to the ``postgres`` system user the package made, and its commands run through
``runuser``. :func:`fresh_database` makes an empty database per test; :func:`database`
also drops it afterwards, cutting the connections its apps left open (a test that crashes
an app on purpose never closes it, and the server takes 100 connections in all).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.ports import free_port

__all__ = [
    "PostgresServer",
    "database",
    "drop_database",
    "fresh_database",
    "kept_postgres",
    "named_database",
    "postgres_bin",
    "throwaway_postgres",
]

_USER = "ragloom"


def postgres_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL server's binaries, or ``None``."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


@dataclass(frozen=True)
class PostgresServer:
    """A running cluster: where it listens, and a URL for one of its databases."""

    host: str
    port: int
    pg_ctl: tuple[str, ...] = ()
    options: str = ""
    log: str = ""

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` (psycopg 3)."""
        return f"postgresql+psycopg://{_USER}@{self.host}:{self.port}/{database}"

    def stop(self) -> None:
        """Stop the server at once (connections are cut, as in a crash); :meth:`start` again.

        A server that does not stop within a minute (a child stuck in a slow disk's fsync,
        on a busy machine) is killed with all its processes: a crash all the same."""
        try:
            subprocess.run(
                _as_owner([*self.pg_ctl, "-m", "immediate", "-w", "stop"]),
                check=True,
                capture_output=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL every process of the server, as in a power cut; :meth:`start` again."""
        _kill_cluster(Path(self.pg_ctl[-1]), self.log)

    def start(self) -> None:
        """Start the stopped server again, on the same port, with its data."""
        subprocess.run(
            _as_owner([*self.pg_ctl, "-l", self.log, "-o", self.options, "-w", "start"]),
            check=True,
            capture_output=True,
            timeout=120,
        )


def _kill_cluster(data: Path, log: str, wait: float = 120.0) -> None:
    """SIGKILL the postmaster of ``data`` and its children (each leads a process group of
    its own, so the postmaster's group is not enough), and wait until all are gone."""
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    children = [
        int(stat.parent.name)
        for stat in Path("/proc").glob("[0-9]*/stat")
        if _parent_of(stat) == postmaster
    ]
    for pid in [postmaster, *children]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait
    while any(Path(f"/proc/{pid}").exists() for pid in [postmaster, *children]):
        if time.monotonic() > deadline:
            tail = Path(log).read_text(errors="replace")[-2000:] if log else ""
            raise TimeoutError(f"PostgreSQL at {data} outlived SIGKILL; its log ends:\n{tail}")
        time.sleep(0.2)


def _parent_of(stat: Path) -> int | None:
    try:  # "pid (command) state ppid ...": the command may hold spaces and parentheses
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None  # the process ended while being read


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def throwaway_postgres(durable: bool = False) -> Iterator[PostgresServer]:
    """Start a cluster; stop it and delete its folder afterwards. Not ``durable``, it skips
    fsync and waits for no commit to reach its log (fast, and a crash may lose the last
    commits); ``durable`` for a test that stops it as a crash would."""
    folder = Path(tempfile.mkdtemp(prefix="ragloom-pg-"))
    try:
        # Stopped as in a crash: nothing of it is kept.
        with _cluster(folder, durable, stop_mode="immediate") as server:
            yield server
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def kept_postgres(folder: Path, durable: bool = False) -> Iterator[PostgresServer]:
    """Start the cluster kept in ``folder`` (made there first if it holds none) on a free
    port; stop it afterwards and keep its data, for a benchmark that fills it once and
    measures in later runs. ``durable`` as for :func:`throwaway_postgres`."""
    # A fast stop writes out what was committed, even without fsync.
    with _cluster(folder, durable, stop_mode="fast") as server:
        yield server


@contextmanager
def _cluster(folder: Path, durable: bool, stop_mode: str) -> Iterator[PostgresServer]:
    binaries = postgres_bin()
    if binaries is None:
        raise FileNotFoundError("no PostgreSQL server is installed (Debian: postgresql)")
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(sockets, "postgres")
    if not (data / "PG_VERSION").is_file():
        shutil.rmtree(data, ignore_errors=True)  # a cluster whose initdb was cut short
        initdb = [str(binaries / "initdb"), "-D", str(data), "-U", _USER, "-A", "trust"]
        subprocess.run(
            _as_owner([*initdb, "-E", "UTF8", "--no-sync", "--no-instructions"]),
            check=True,
            capture_output=True,
            timeout=120,
        )
    pg_ctl = [str(binaries / "pg_ctl"), "-D", str(data)]
    # A kept cluster whose last user was killed may still run, on the port it had then.
    running = subprocess.run(_as_owner([*pg_ctl, "status"]), capture_output=True, timeout=60)
    if running.returncode == 0:
        subprocess.run(_as_owner([*pg_ctl, "-m", "fast", "-w", "stop"]), timeout=600, check=True)
    port = free_port()
    log = folder / "server.log"
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets}"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    subprocess.run(
        _as_owner([*pg_ctl, "-l", str(log), "-o", options, "-w", "start"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield PostgresServer("127.0.0.1", port, tuple(pg_ctl), options, str(log))
    finally:
        subprocess.run(
            _as_owner([*pg_ctl, "-m", stop_mode, "-w", "stop"]),
            capture_output=True,
            timeout=600,
            check=False,
        )


def _administer(server: PostgresServer, statement: str) -> None:
    import psycopg

    with psycopg.connect(
        host=server.host, port=server.port, user=_USER, dbname="postgres", autocommit=True
    ) as connection:
        connection.execute(statement)


def fresh_database(server: PostgresServer) -> str:
    """A new empty database on ``server``; its URL."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    _administer(server, f'CREATE DATABASE "{name}"')
    return server.url(name)


def named_database(server: PostgresServer, name: str) -> str:
    """The URL of database ``name`` on ``server``, made first if it is not there (for a
    kept cluster)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=server.host, port=server.port, user=_USER, dbname="postgres", autocommit=True
    ) as connection:
        found = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if found.fetchone() is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return server.url(name)


def drop_database(server: PostgresServer, url: str) -> None:
    """Drop the database of ``url`` (one :func:`fresh_database` made), cutting whatever
    connections to it are still open."""
    name = url.rsplit("/", 1)[1]
    _administer(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def database(server: PostgresServer) -> Iterator[str]:
    """A new empty database on ``server`` for the block (its URL), dropped afterwards."""
    url = fresh_database(server)
    try:
        yield url
    finally:
        drop_database(server, url)
