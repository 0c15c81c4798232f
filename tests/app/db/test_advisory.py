"""PostgreSQL advisory locks as the work locks every process of a deployment sees: each
``AdvisoryLocks`` below stands for one process (its own engine, so its own connections),
on the shared throwaway cluster."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import create_engine

from ragloom_app.db.advisory import AdvisoryLocks, advisory_key
from tests.helpers.postgres import PostgresServer, database

pytestmark = pytest.mark.postgres


@pytest.fixture
def url(postgres_server: PostgresServer) -> Iterator[str]:
    with database(postgres_server) as made:
        yield made


@pytest.fixture
def engines(url: str) -> Iterator[tuple[Engine, Engine]]:
    made = (create_engine(url, pool_pre_ping=True), create_engine(url, pool_pre_ping=True))
    yield made
    for engine in made:
        engine.dispose()


def _holder_pid(engine: Engine, name: str) -> int:
    """The server process of the connection that holds ``name``."""
    unsigned = advisory_key(name) & 0xFFFF_FFFF_FFFF_FFFF
    with engine.connect() as connection:
        pid = connection.scalar(
            text(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = :high AND objid = :low AND objsubid = 1"
            ),
            {"high": unsigned >> 32, "low": unsigned & 0xFFFF_FFFF},
        )
    assert isinstance(pid, int), f"nobody holds {name!r}"
    return pid


def _terminate(engine: Engine, pid: int) -> None:
    with engine.connect() as connection:
        connection.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


def test_a_lock_excludes_other_processes_and_this_ones_other_callers(
    engines: tuple[Engine, Engine],
) -> None:
    here, there = AdvisoryLocks(engines[0]), AdvisoryLocks(engines[1])
    assert here.try_acquire("file-index/1/abc")
    assert not there.try_acquire("file-index/1/abc")
    assert not here.try_acquire("file-index/1/abc")  # PostgreSQL alone would stack it
    assert there.try_acquire("file-index/2/abc")  # another name is another lock
    assert there.is_held("file-index/1/abc") and here.is_held("file-index/2/abc")
    assert not there.is_held("file-index/1/other")

    here.release("file-index/1/abc")
    assert not there.is_held("file-index/1/abc")
    assert there.try_acquire("file-index/1/abc")
    assert there.held == ["file-index/1/abc", "file-index/2/abc"]
    here.release("never-taken")  # nothing to let go of


def test_a_connection_is_kept_only_while_a_lock_is_held(engines: tuple[Engine, Engine]) -> None:
    locks = AdvisoryLocks(engines[0])
    pool = engines[0].pool
    assert locks.try_acquire("one") and locks.try_acquire("two")
    assert pool.checkedout() == 1  # one connection holds both
    assert not AdvisoryLocks(engines[1]).try_acquire("one")
    assert engines[1].pool.checkedout() == 0  # a refused try keeps none
    locks.release("one")
    assert pool.checkedout() == 1
    locks.release("two")
    assert pool.checkedout() == 0


def test_the_server_frees_the_lock_of_a_killed_process(
    url: str, engines: tuple[Engine, Engine]
) -> None:
    probe = (
        "import sys, time\n"
        "from sqlmodel import create_engine\n"
        "from ragloom_app.db.advisory import AdvisoryLocks\n"
        "assert AdvisoryLocks(create_engine(sys.argv[1])).try_acquire('file-index/1/abc')\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", probe, url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        here = AdvisoryLocks(engines[0])
        assert here.is_held("file-index/1/abc")
        assert not here.try_acquire("file-index/1/abc")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
        deadline = time.monotonic() + 10
        while not here.try_acquire("file-index/1/abc"):
            assert time.monotonic() < deadline, "the killed process's lock was never freed"
            time.sleep(0.05)
    finally:
        holder.kill()
        holder.wait(30)


def test_locks_lost_with_their_connection_are_taken_again(
    engines: tuple[Engine, Engine], caplog: pytest.LogCaptureFixture
) -> None:
    here, there = AdvisoryLocks(engines[0]), AdvisoryLocks(engines[1])
    assert here.try_acquire("one")
    _terminate(engines[1], _holder_pid(engines[1], "one"))  # as a server restart does

    with caplog.at_level(logging.WARNING, logger="ragloom_app.db.advisory"):
        assert here.try_acquire("two")
    assert "lost the connection of advisory locks" in caplog.text
    assert here.held == ["one", "two"]
    assert not there.try_acquire("one")
    assert _holder_pid(engines[1], "one") == _holder_pid(engines[1], "two")


def test_a_lock_another_process_took_while_the_connection_was_lost_is_given_up_and_logged(
    engines: tuple[Engine, Engine], caplog: pytest.LogCaptureFixture
) -> None:
    here, there = AdvisoryLocks(engines[0]), AdvisoryLocks(engines[1])
    assert here.try_acquire("one")
    _terminate(engines[1], _holder_pid(engines[1], "one"))
    assert there.try_acquire("one")  # it was free on the server meanwhile

    with caplog.at_level(logging.ERROR, logger="ragloom_app.db.advisory"):
        assert here.try_acquire("two")
    assert "lost the lock 'one' to another process" in caplog.text
    assert here.held == ["two"]
    here.release("one")  # no longer its: nothing to let go of, and no error
    assert there.is_held("one")


def test_letting_go_on_a_lost_connection_takes_the_other_locks_again_at_once(
    engines: tuple[Engine, Engine],
) -> None:
    here, there = AdvisoryLocks(engines[0]), AdvisoryLocks(engines[1])
    assert here.try_acquire("one") and here.try_acquire("two")
    _terminate(engines[1], _holder_pid(engines[1], "one"))
    here.release("one")
    assert here.held == ["two"]
    assert not there.try_acquire("two")  # held again, not only at this one's next call
    assert there.try_acquire("one")
    here.release("two")
    assert engines[0].pool.checkedout() == 0


def test_only_postgresql_has_them() -> None:
    with pytest.raises(ValueError, match="need PostgreSQL, not sqlite"):
        AdvisoryLocks(create_engine("sqlite://"))


def test_keys_are_stable_signed_64_bit_integers() -> None:
    key = advisory_key("file-index/1/abc")
    assert key == advisory_key("file-index/1/abc") != advisory_key("file-index/2/abc")
    assert -(2**63) <= key < 2**63
