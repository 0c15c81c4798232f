"""Named locks that every process of a deployment sees: PostgreSQL session advisory locks.

Work locks are files in a data folder (:mod:`ragloom_app.index.file.worklock`), which only
the processes sharing that folder see. App processes and workers with data folders of
their own share the database instead; when it is PostgreSQL, each work lock is also taken
there as a session-level advisory lock. The server drops such a lock when its connection
ends, however the process ends (SIGKILL included), so "nobody holds it" means "nobody is
working on it" for every process of the deployment, as the lock file does for one folder.

While this process holds any lock, :class:`AdvisoryLocks` keeps one connection of the
engine's pool for them, and gives it back once it holds none: an idle process keeps no
connection. If that connection is lost (the server restarted), its locks went with it;
the next call takes a new connection and takes them again, and logs any that another
process took meanwhile. Advisory locks need the session to stay on one server
connection, so a pooler in front of PostgreSQL must not run in transaction mode.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

__all__ = ["AdvisoryLocks", "advisory_key"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

# pg_locks shows a one-bigint key as its high and low halves (classid, objid), objsubid 1.
_HELD_ANYWHERE = text(
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = :high AND objid = :low AND objsubid = 1)"
)


def advisory_key(name: str) -> int:
    """The signed 64-bit key of the lock ``name``: 8 bytes of its BLAKE2b hash, so that
    keys of different names collide with a chance of 2**-64 (a collision only makes a
    free piece of work look busy)."""
    digest = hashlib.blake2b(f"ragloom/{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class AdvisoryLocks:
    """Exclusive named locks on ``engine``'s PostgreSQL database (see the module docstring).

    Exclusive within this process too: a name this object holds is refused to its other
    callers, as to other processes (PostgreSQL's own would let the same session take it
    twice). Thread-safe.
    """

    def __init__(self, engine: Engine) -> None:
        if engine.dialect.name != "postgresql":
            raise ValueError(f"advisory locks need PostgreSQL, not {engine.dialect.name}")
        self.engine = engine
        self._held: dict[int, str] = {}
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    @property
    def held(self) -> list[str]:
        """The names this object holds now."""
        with self._lock:
            return sorted(self._held.values())

    def try_acquire(self, name: str) -> bool:
        """Take the lock ``name`` if nobody holds it; whether it was taken. Never waits."""
        key = advisory_key(name)
        with self._lock:
            if key in self._held:
                return False
            try:
                taken = self._on_holding_connection(
                    lambda c: bool(c.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}))
                )
                if taken:
                    self._held[key] = name
            finally:
                if not self._held:
                    self._give_back()  # nothing held: the connection goes back at once
            return taken

    def release(self, name: str) -> None:
        """Let go of the lock ``name`` (nothing if this object does not hold it)."""
        key = advisory_key(name)
        with self._lock:
            if self._held.pop(key, None) is None:
                return
            connection = self._connection
            if connection is not None:
                try:
                    connection.scalar(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                except DBAPIError:
                    # Its connection is gone, and the server dropped the lock with it.
                    logger.warning("lost the connection of advisory locks", exc_info=True)
                    self._drop_connection()
            if not self._held:
                self._give_back()
            elif self._connection is None:
                self._take_again_now()

    def _take_again_now(self) -> None:
        """Take the locks still held again at once (the others' went with a lost
        connection), or leave it to the next call if the server cannot be reached."""
        try:
            self._holding_connection()
        except DBAPIError:
            logger.warning("could not take advisory locks again yet", exc_info=True)
            self._drop_connection()

    def is_held(self, name: str) -> bool:
        """Whether any process, this one included, holds the lock ``name``."""
        key = advisory_key(name)
        with self._lock:
            if key in self._held:
                return True
        unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
        with self.engine.connect() as connection:
            found = connection.scalar(
                _HELD_ANYWHERE, {"high": unsigned >> 32, "low": unsigned & 0xFFFF_FFFF}
            )
        return bool(found)

    def _on_holding_connection(self, run: Callable[[Connection], _T]) -> _T:
        """``run`` on the connection that holds this object's locks (taken from the pool if
        none); once again on a new one, its locks taken again, if that one was lost."""
        try:
            return run(self._holding_connection())
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
        logger.warning("lost the connection of advisory locks; taking them again")
        self._drop_connection()
        return run(self._holding_connection())

    def _holding_connection(self) -> Connection:
        if self._connection is None:
            connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._connection = connection
            self._take_again(connection)
        return self._connection

    def _take_again(self, connection: Connection) -> None:
        """Take the locks held before a lost connection again, on ``connection``."""
        for key, name in list(self._held.items()):
            if not connection.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}):
                # While no connection held it, another process found it free and took it.
                logger.error("lost the lock %r to another process while reconnecting", name)
                del self._held[key]

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.invalidate()
            connection.close()

    def _give_back(self) -> None:
        """Return the connection to the pool: it holds no lock now."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
