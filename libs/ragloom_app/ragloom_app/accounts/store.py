"""Accounts, login sessions and API keys, in the app database.

Passwords are kept as argon2id hashes (:mod:`.passwords`); session tokens and API keys
are random (32 bytes) and kept as their SHA-256, so the database never holds anything
that logs in. A login is refused alike for an unknown name and a wrong password (and
takes as long), and past :data:`MAX_FAILED_LOGINS` failures an account or an address
waits (:class:`~.ratelimit.FailureLimiter`).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import re
import secrets
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom_app.accounts.passwords import hash_password, needs_rehash, verify_password
from ragloom_app.accounts.ratelimit import FailureLimiter
from ragloom_app.db.models import (
    LOCAL_USER,
    ApiKeyRecord,
    SessionRecord,
    UserRecord,
    UserSettingsRecord,
)
from ragloom_app.errors import UserFacingError

__all__ = [
    "API_KEY_PREFIX",
    "MAX_FAILED_LOGINS",
    "SESSION_HOURS",
    "AccountError",
    "AccountStore",
    "ApiKeyInfo",
    "LoginRefused",
    "User",
]

SESSION_HOURS = 12
"""How long a login session lasts."""
MAX_FAILED_LOGINS = 5
"""Failed logins an account may have in :data:`FAILED_LOGIN_WINDOW` seconds."""
MAX_FAILED_LOGINS_PER_ADDRESS = 20
"""Failed logins one client address may have in :data:`FAILED_LOGIN_WINDOW` seconds."""
FAILED_LOGIN_WINDOW = 15 * 60.0
MAX_CONCURRENT_VERIFIES = 2
"""Password checks at once (each argon2id verify takes 64 MiB and a core for ~0.15 s)."""
API_KEY_PREFIX = "rlk_"
"""How every API key starts (so a leaked one is recognisable, e.g. by secret scanners)."""
MAX_KEYS_PER_USER = 20
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the name is unknown, so both refusals take as long."""
    return hash_password(secrets.token_urlsafe(16))


class AccountError(UserFacingError, ValueError):
    """A name, password or key the accounts refuse, in words for the person."""


class LoginRefused(UserFacingError):
    """A login that did not succeed; ``retry_after`` > 0 when it was rate-limited."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class User:
    """Who a request acts for."""

    id: str
    name: str
    is_admin: bool = False


@dataclass(frozen=True)
class ApiKeyInfo:
    """An API key as a list shows it: never the key itself."""

    id: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _user(record: UserRecord) -> User:
    return User(record.id, record.name, record.is_admin)


def _aware(moment: datetime) -> datetime:
    # SQLite gives back naive datetimes: they were written in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class AccountStore:
    """Users, their sessions and API keys (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.by_account = FailureLimiter(MAX_FAILED_LOGINS, FAILED_LOGIN_WINDOW)
        self.by_address = FailureLimiter(MAX_FAILED_LOGINS_PER_ADDRESS, FAILED_LOGIN_WINDOW)
        self._verifying = threading.BoundedSemaphore(MAX_CONCURRENT_VERIFIES)

    # -- users ----------------------------------------------------------------------------
    def add_user(self, name: str, password: str, *, is_admin: bool = False) -> User:
        """A new account; :class:`AccountError` for a name taken or not allowed, or a
        password too short or too long."""
        if not _NAME.fullmatch(name):
            raise AccountError(
                "a user name is 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit"
            )
        try:
            password_hash = hash_password(password)
        except ValueError as exc:
            raise AccountError(str(exc)) from None
        with Session(self.engine) as session:
            if session.exec(select(UserRecord).where(UserRecord.name == name)).first():
                raise AccountError(f"there is a user named {name!r} already")
            record = UserRecord(
                id=uuid.uuid4().hex, name=name, password_hash=password_hash, is_admin=is_admin
            )
            session.add(record)
            session.commit()
            return _user(record)

    def users(self) -> list[tuple[User, bool]]:
        """Every user, with whether it is disabled, by name."""
        with Session(self.engine) as session:
            rows = session.exec(select(UserRecord).order_by(col(UserRecord.name)))
            return [(_user(r), r.disabled) for r in rows]

    def enabled_count(self) -> int:
        """How many users can log in (not disabled)."""
        with Session(self.engine) as session:
            rows = session.exec(select(UserRecord.id).where(col(UserRecord.disabled).is_(False)))
            return len(rows.all())

    def user_named(self, name: str) -> User | None:
        """The enabled or disabled user ``name``, or ``None``."""
        with Session(self.engine) as session:
            record = _named(session, name)
            return None if record is None else _user(record)

    def user_by_id(self, user_id: str) -> User | None:
        """The user of that id, or ``None``."""
        with Session(self.engine) as session:
            record = session.get(UserRecord, user_id)
            return None if record is None else _user(record)

    def enabled_user(self, user_id: str) -> User | None:
        """The user of that id if it may act now (not disabled), or ``None``."""
        with Session(self.engine) as session:
            record = session.get(UserRecord, user_id)
            return None if record is None or record.disabled else _user(record)

    def display_name(self, user_id: str) -> str:
        """The name to show for the owner ``user_id`` (``local`` for the laptop's user)."""
        if user_id == LOCAL_USER:
            return LOCAL_USER
        user = self.user_by_id(user_id)
        return user.name if user is not None else "(deleted user)"

    def set_password(self, name: str, password: str) -> None:
        """Give ``name`` a new password; its sessions end."""
        try:
            password_hash = hash_password(password)
        except ValueError as exc:
            raise AccountError(str(exc)) from None
        with Session(self.engine) as session:
            record = self._record(session, name)
            record.password_hash = password_hash
            session.add(record)
            self._end_sessions(session, record.id)
            session.commit()

    def set_disabled(self, name: str, disabled: bool) -> None:
        """Disable (its sessions end, its keys stop working) or enable ``name``."""
        with Session(self.engine) as session:
            record = self._record(session, name)
            record.disabled = disabled
            session.add(record)
            if disabled:
                self._end_sessions(session, record.id)
            session.commit()

    def delete_user(self, name: str) -> None:
        """Delete ``name``, its sessions, keys and saved chat defaults (the indices and
        conversations it owns are the caller's to remove first: :func:`.remove_user`)."""
        with Session(self.engine) as session:
            record = self._record(session, name)
            self._end_sessions(session, record.id)
            for key in session.exec(select(ApiKeyRecord).where(ApiKeyRecord.user_id == record.id)):
                session.delete(key)
            saved = session.get(UserSettingsRecord, record.id)
            if saved is not None:
                session.delete(saved)
            session.delete(record)
            session.commit()

    @staticmethod
    def _record(session: Session, name: str) -> UserRecord:
        record = _named(session, name)
        if record is None:
            raise AccountError(f"no user named {name!r}")
        return record

    @staticmethod
    def _end_sessions(session: Session, user_id: str) -> None:
        for row in session.exec(select(SessionRecord).where(SessionRecord.user_id == user_id)):
            session.delete(row)

    # -- logins and sessions ---------------------------------------------------------------
    def login(self, name: str, password: str, address: str = "") -> tuple[User, str]:
        """The user and a new session token, or :class:`LoginRefused` (the same words for
        an unknown name, a wrong password and a disabled account).

        Each attempt counts as a failure before the password is checked (and is taken back
        if it succeeds), so attempts sent at once cannot pass the limit together; at most
        :data:`MAX_CONCURRENT_VERIFIES` checks run at once (each takes 64 MiB), more are
        refused as busy. A loopback ``address`` is not limited by address: behind a proxy,
        or on a laptop, every client has it, and one would lock everyone out."""
        by_address = address and not _is_loopback(address)
        wait = max(
            self.by_account.retry_after(name),
            self.by_address.retry_after(address) if by_address else 0.0,
        )
        if wait > 0:
            raise LoginRefused(
                f"too many failed logins: try again in {int(wait) + 1} s", retry_after=wait
            )
        if not self._verifying.acquire(blocking=False):
            raise LoginRefused("too many logins at once: try again in a second", retry_after=1.0)
        try:
            self.by_account.failed(name)
            if by_address:
                self.by_address.failed(address)
            user, token = self._check_and_open(name, password)
        finally:
            self._verifying.release()
        self.by_account.forgive(name)
        if by_address:
            self.by_address.forgive(address)
        return user, token

    def _check_and_open(self, name: str, password: str) -> tuple[User, str]:
        with Session(self.engine) as session:
            record = _named(session, name)
            ok = verify_password(record.password_hash if record else _dummy_hash(), password)
            if record is None or not ok or record.disabled:
                raise LoginRefused("the name or the password is not right")
            if needs_rehash(record.password_hash):
                record.password_hash = hash_password(password)
                session.add(record)
            token = secrets.token_urlsafe(32)
            expires = datetime.now(UTC) + timedelta(hours=SESSION_HOURS)
            session.add(
                SessionRecord(token_hash=_digest(token), user_id=record.id, expires_at=expires)
            )
            # Sessions never presented again would pile up: the expired ones go now.
            for stale in session.exec(
                select(SessionRecord).where(col(SessionRecord.expires_at) < datetime.now(UTC))
            ):
                session.delete(stale)
            session.commit()
            return _user(record), token

    def session_user(self, token: str) -> User | None:
        """The user of a live session token, or ``None`` (unknown, expired, disabled)."""
        if not token or len(token) > 200:
            return None
        with Session(self.engine) as session:
            row = session.get(SessionRecord, _digest(token))
            if row is None:
                return None
            if _aware(row.expires_at) <= datetime.now(UTC):
                session.delete(row)
                session.commit()
                return None
            record = session.get(UserRecord, row.user_id)
            return None if record is None or record.disabled else _user(record)

    def logout(self, token: str) -> None:
        """End the session of ``token`` (nothing if there is none)."""
        with Session(self.engine) as session:
            row = session.get(SessionRecord, _digest(token))
            if row is not None:
                session.delete(row)
                session.commit()

    # -- API keys -------------------------------------------------------------------------
    def create_key(self, user: User, name: str) -> tuple[ApiKeyInfo, str]:
        """A new API key of ``user``: its listing and the key, which is shown this once."""
        name = name.strip()[:80] or "key"
        key = API_KEY_PREFIX + secrets.token_urlsafe(32)
        with Session(self.engine) as session:
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
                key_hash=_digest(key),
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
                select(ApiKeyRecord).where(ApiKeyRecord.key_hash == _digest(key))
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
            if last is None or now - _aware(last) > timedelta(minutes=1):
                record.last_used_at = now
                session.add(record)
                session.commit()
            return _user(user)

    @staticmethod
    def _key_info(record: ApiKeyRecord) -> ApiKeyInfo:
        return ApiKeyInfo(
            record.id, record.name, record.prefix, record.created_at, record.last_used_at
        )


def _named(session: Session, name: str) -> UserRecord | None:
    """The user ``name``, or ``None``; a name no account can have (a NUL in it, which
    PostgreSQL refuses even in a lookup) is not looked up."""
    if not _NAME.match(name):  # as names were checked when made ("bob\n" passed, once)
        return None
    return session.exec(select(UserRecord).where(UserRecord.name == name)).first()
