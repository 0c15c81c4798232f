"""API keys: made by their user (shown once), listed by their first characters, revoked
one by one, or all at once when the user's password changes."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select, update

from ragloom_app.accounts.identity import AccountError, User, as_utc, secret_digest, user_of
from ragloom_app.db.models import ApiKeyRecord, UserRecord

__all__ = ["API_KEY_PREFIX", "MAX_KEYS_PER_USER", "ApiKeyInfo", "ApiKeyStore"]

API_KEY_PREFIX = "rlk_"
"""How every API key starts (so a leaked one is recognisable, e.g. by secret scanners)."""
MAX_KEYS_PER_USER = 20


@dataclass(frozen=True)
class ApiKeyInfo:
    """An API key as a list shows it: never the key itself."""

    id: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


class ApiKeyStore:
    """The API keys of the users in ``engine``'s database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create_key(self, user: User, name: str) -> tuple[ApiKeyInfo, str]:
        """A new API key of ``user``: its listing and the key, which is shown this once.

        Its ``name`` is a label: cut to 80 characters, with no control characters (a NUL
        is refused by PostgreSQL, a new line would break a listing), ``key`` if none is left.
        """
        name = "".join(ch for ch in name if ch.isprintable()).strip()[:80] or "key"
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        with Session(self.engine) as session:
            _one_key_maker_at_a_time(session, user.id)
            live = session.exec(
                select(ApiKeyRecord).where(
                    ApiKeyRecord.user_id == user.id, col(ApiKeyRecord.revoked_at).is_(None)
                )
            ).all()
            if len(live) >= MAX_KEYS_PER_USER:
                raise AccountError(
                    f"a user has at most {MAX_KEYS_PER_USER} API keys: revoke one first"
                )
            record = ApiKeyRecord(
                id=uuid.uuid4().hex[:12],
                user_id=user.id,
                name=name,
                key_hash=secret_digest(key),
                prefix=key[: len(API_KEY_PREFIX) + 6],
            )
            session.add(record)
            session.commit()
            return self._key_info(record), key

    def keys(self, user: User) -> list[ApiKeyInfo]:
        """``user``'s API keys not revoked, oldest first."""
        with Session(self.engine) as session:
            rows = session.exec(
                select(ApiKeyRecord)
                .where(ApiKeyRecord.user_id == user.id, col(ApiKeyRecord.revoked_at).is_(None))
                .order_by(col(ApiKeyRecord.created_at))
            )
            return [self._key_info(r) for r in rows]

    def revoke_key(self, user: User, key_id: str) -> bool:
        """Revoke one of ``user``'s keys; ``False`` if it has none of that id."""
        with Session(self.engine) as session:
            record = session.get(ApiKeyRecord, key_id)
            if record is None or record.user_id != user.id or record.revoked_at is not None:
                return False
            record.revoked_at = datetime.now(UTC)
            session.add(record)
            session.commit()
            return True

    def key_user(self, key: str) -> User | None:
        """The user of a live API key, or ``None``."""
        if not key.startswith(API_KEY_PREFIX) or len(key) > 200:
            return None
        with Session(self.engine) as session:
            record = session.exec(
                select(ApiKeyRecord).where(ApiKeyRecord.key_hash == secret_digest(key))
            ).first()
            if record is None or record.revoked_at is not None:
                return None
            user = session.get(UserRecord, record.user_id)
            if user is None or user.disabled:
                return None
            now = datetime.now(UTC)
            # A write per request would serialize every API call on the database: a key's
            # last use is kept to the minute.
            last = record.last_used_at
            if last is None or now - as_utc(last) > timedelta(minutes=1):
                record.last_used_at = now
                session.add(record)
                session.commit()
            return user_of(user)

    @staticmethod
    def revoke_all(session: Session, user_id: str) -> None:
        """Revoke every live key of ``user_id`` in ``session`` (committed with it)."""
        session.exec(
            update(ApiKeyRecord)
            .where(col(ApiKeyRecord.user_id) == user_id, col(ApiKeyRecord.revoked_at).is_(None))
            .values(revoked_at=datetime.now(UTC))
        )

    @staticmethod
    def _key_info(record: ApiKeyRecord) -> ApiKeyInfo:
        return ApiKeyInfo(
            record.id, record.name, record.prefix, record.created_at, record.last_used_at
        )


def _one_key_maker_at_a_time(session: Session, user_id: str) -> None:
    """Begin ``session``'s transaction so that the user's keys are counted and one is
    added with no other key of theirs made in between (keys made at once passed
    ``MAX_KEYS_PER_USER`` together): the user's row locked on PostgreSQL, the write lock
    taken at once on SQLite."""
    if session.get_bind().dialect.name == "postgresql":
        session.exec(  # type: ignore[call-overload]
            text("SELECT id FROM users WHERE id = :id FOR UPDATE"), params={"id": user_id}
        )
    else:
        session.exec(text("BEGIN IMMEDIATE"))  # type: ignore[call-overload]
