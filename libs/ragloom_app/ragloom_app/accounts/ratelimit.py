"""Failed logins, counted per account and per address, in a sliding window.

Past ``max_failures`` failures within ``window`` seconds, a key (an account name, a
client address) is refused until its oldest failure leaves the window. A success does not
wipe earlier failures (an attacker with one right password would reset the count); it
takes back the attempt it counted.

The failures are rows of the app database (``login_failures``), so that every app process
behind one address counts the same attempts: kept in each process, N processes gave an
account N times its failures. Rows older than the window are deleted as new ones come.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, and_, delete, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom.storable import storable_text
from ragloom_app.db.models import LoginFailure

__all__ = ["FailureLimiter"]

_MAX_KEY_CHARS = 200  # an address, or a name: longer ones are cut (they fail anyway)


class FailureLimiter:
    """Counts failures per key in ``scope`` (``"account"``, ``"address"``);
    :meth:`retry_after` says how long a key must wait."""

    def __init__(
        self,
        engine: Engine,
        scope: str,
        max_failures: int,
        window: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.scope = scope
        self.max_failures = max_failures
        self.window = window
        self._clock = clock  # wall time: the processes that share the rows share no other

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def _of(self, key: str) -> ColumnElement[bool]:
        return and_(col(LoginFailure.scope) == self.scope, col(LoginFailure.key) == _stored(key))

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        now = self._now()
        since = now - timedelta(seconds=self.window)
        with Session(self.engine) as session:
            count, oldest = session.exec(
                select(func.count(), func.min(LoginFailure.at)).where(
                    self._of(key), col(LoginFailure.at) > since
                )
            ).one()
        if count < self.max_failures or oldest is None:
            return 0.0
        oldest = oldest if oldest.tzinfo is not None else oldest.replace(tzinfo=UTC)
        return max(0.0, (oldest - since).total_seconds())

    def failed(self, key: str) -> bool:
        """Count one failure of ``key`` (and forget the failures the window has left);
        ``False``, and not counted, if it is one more than ``max_failures`` allows.

        Counted first, then all of the key's counted: of attempts sent at once, the last
        to count sees every one counted before it, so no more than ``max_failures`` are
        ever let through in a window (attempts that count together at the limit may all
        be refused; none is let past it). Looking at the count first, then adding to it,
        let two attempts at once both through at the limit."""
        now = self._now()
        since = now - timedelta(seconds=self.window)
        with Session(self.engine) as session:
            mine = LoginFailure(scope=self.scope, key=_stored(key), at=now)
            session.add(mine)
            session.exec(delete(LoginFailure).where(col(LoginFailure.at) <= since))
            session.commit()
            counted = session.exec(
                select(func.count()).where(self._of(key), col(LoginFailure.at) > since)
            ).one()
            if counted <= self.max_failures:
                return True
            session.exec(delete(LoginFailure).where(col(LoginFailure.id) == mine.id))
            session.commit()
            return False

    def forgive(self, key: str) -> None:
        """Take back ``key``'s latest failure (an attempt counted before it succeeded)."""
        with Session(self.engine) as session:
            latest = session.exec(
                select(LoginFailure)
                .where(self._of(key))
                .order_by(col(LoginFailure.at).desc(), col(LoginFailure.id).desc())
                .limit(1)
            ).first()
            if latest is not None:
                session.delete(latest)
                session.commit()


def _stored(key: str) -> str:
    """``key`` as a row keeps it: a login's name is anything a client sent (a NUL, which
    PostgreSQL refuses even in a lookup), cut to a bound."""
    return storable_text(key[:_MAX_KEY_CHARS])
