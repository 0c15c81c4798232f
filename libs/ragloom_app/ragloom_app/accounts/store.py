"""Accounts, login sessions and API keys, in the app database.

Passwords are kept as argon2id hashes (:mod:`.passwords`); session tokens and API keys
are random (32 bytes) and kept as their SHA-256, so the database never holds anything
that logs in. A login is refused alike for an unknown name and a wrong password (and
takes as long), and past :data:`MAX_FAILED_LOGINS` failures an account or an address
waits (:class:`~.ratelimit.FailureLimiter`).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import secrets
import threading
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select, update

from ragloom_app.accounts.identity import AccountError, User, as_utc, secret_digest, user_of
from ragloom_app.accounts.keys import ApiKeyStore
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

__all__ = ["MAX_FAILED_LOGINS", "SESSION_HOURS", "AccountStore", "LoginRefused"]

SESSION_HOURS = 12
"""How long a login session lasts."""
MAX_FAILED_LOGINS = 5
"""Failed logins an account may have in :data:`FAILED_LOGIN_WINDOW` seconds."""
MAX_FAILED_LOGINS_PER_ADDRESS = 20
"""Failed logins one client address may have in :data:`FAILED_LOGIN_WINDOW` seconds."""
FAILED_LOGIN_WINDOW = 15 * 60.0
MAX_CONCURRENT_VERIFIES = 2
"""Password checks at once (each argon2id verify takes 64 MiB and a core for ~0.15 s)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the name is unknown, so both refusals take as long."""
    return hash_password(secrets.token_urlsafe(16))


class LoginRefused(UserFacingError):
    """A login that did not succeed; ``retry_after`` > 0 when it was rate-limited."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _limited(wait: float) -> LoginRefused:
    """The refusal of an attempt past a failed-login limit, ``wait`` seconds from its end
    (at least one: attempts counted together at the limit leave no wait of their own)."""
    wait = max(wait, 1.0)
    return LoginRefused(f"too many failed logins: try again in {int(wait) + 1} s", retry_after=wait)


def _is_loopback(address: str) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address == "localhost"
    mapped = getattr(parsed, "ipv4_mapped", None)  # "::ffff:127.0.0.1" on a dual-stack socket
    return (mapped or parsed).is_loopback


class AccountStore(ApiKeyStore):
    """Users, their sessions and API keys (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.by_account = FailureLimiter(engine, "account", MAX_FAILED_LOGINS, FAILED_LOGIN_WINDOW)
        self.by_address = FailureLimiter(
            engine, "address", MAX_FAILED_LOGINS_PER_ADDRESS, FAILED_LOGIN_WINDOW
        )
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
        if name.lower() == LOCAL_USER:
            # The owner of what the local (login-free) user and INDICES made: an account
            # of that name would be shown, and picked by --user, as that owner.
            raise AccountError(f"{name!r} names the app's local user: choose another name")
        try:
            password_hash = hash_password(password)
        except ValueError as exc:
            raise AccountError(str(exc)) from None
        taken = AccountError(f"there is a user named {name!r} already")
        with Session(self.engine) as session:
            # Names that differ in case alone would look like one user wherever shown.
            same = func.lower(UserRecord.name) == name.lower()
            if session.exec(select(UserRecord.id).where(same)).first():
                raise taken
            record = UserRecord(
                id=uuid.uuid4().hex, name=name, password_hash=password_hash, is_admin=is_admin
            )
            session.add(record)
            try:
                session.commit()
            except IntegrityError:  # the same name, added at the same moment
                raise taken from None
            return user_of(record)

    def users(self) -> list[tuple[User, bool]]:
        """Every user, with whether it is disabled, by name."""
        with Session(self.engine) as session:
            rows = session.exec(select(UserRecord).order_by(col(UserRecord.name)))
            return [(user_of(r), r.disabled) for r in rows]

    def enabled_count(self) -> int:
        """How many users can log in (not disabled)."""
        with Session(self.engine) as session:
            rows = session.exec(select(UserRecord.id).where(col(UserRecord.disabled).is_(False)))
            return len(rows.all())

    def user_named(self, name: str) -> User | None:
        """The enabled or disabled user ``name``, or ``None``."""
        with Session(self.engine) as session:
            record = _named(session, name)
            return None if record is None else user_of(record)

    def user_by_id(self, user_id: str) -> User | None:
        """The user of that id, or ``None``."""
        with Session(self.engine) as session:
            record = session.get(UserRecord, user_id)
            return None if record is None else user_of(record)

    def enabled_user(self, user_id: str) -> User | None:
        """The user of that id if it may act now (not disabled), or ``None``."""
        with Session(self.engine) as session:
            record = session.get(UserRecord, user_id)
            return None if record is None or record.disabled else user_of(record)

    def display_name(self, user_id: str) -> str:
        """The name to show for the owner ``user_id`` (``local`` for the laptop's user)."""
        if user_id == LOCAL_USER:
            return LOCAL_USER
        user = self.user_by_id(user_id)
        return user.name if user is not None else "(deleted user)"

    def set_password(self, name: str, password: str) -> None:
        """Give ``name`` a new password; its sessions end and its API keys are revoked,
        so that whoever knew the old one keeps nothing it made with it."""
        try:
            password_hash = hash_password(password)
        except ValueError as exc:
            raise AccountError(str(exc)) from None
        with Session(self.engine) as session:
            record = self._record(session, name)
            record.password_hash = password_hash
            session.add(record)
            self._end_sessions(session, record.id)
            self.revoke_all(session, record.id)
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
            raise _limited(wait)
        if not self._verifying.acquire(blocking=False):
            raise LoginRefused("too many logins at once: try again in a second", retry_after=1.0)
        try:
            # Counted before the check, so that attempts at once cannot pass the limit
            # together; one too many is refused here (another counted meanwhile).
            if not self.by_account.failed(name):
                raise _limited(self.by_account.retry_after(name))
            if by_address and not self.by_address.failed(address):
                self.by_account.forgive(name)
                raise _limited(self.by_address.retry_after(address))
            user, token = self._check_and_open(name, password)
        except LoginRefused:
            raise
        except BaseException:  # the database failed, not the password: nothing counts
            self._forgive(name, address if by_address else "")
            raise
        finally:
            self._verifying.release()
        self._forgive(name, address if by_address else "")
        return user, token

    def _forgive(self, name: str, address: str) -> None:
        self.by_account.forgive(name)
        if address:
            self.by_address.forgive(address)

    def _check_and_open(self, name: str, password: str) -> tuple[User, str]:
        with Session(self.engine) as session:
            record = _named(session, name)
            user = None if record is None or record.disabled else user_of(record)
            checked = record.password_hash if record else _dummy_hash()
        # No transaction stays open through the check (a core for ~0.15 s).
        if not verify_password(checked, password) or user is None:
            raise LoginRefused("the name or the password is not right")
        opened = self._open_session(user, password, checked)
        if opened is None:
            # The hash changed since the read: a new password or a disabling (refused), or
            # another login of the same password rehashing it (checked again, once).
            with Session(self.engine) as session:
                record = session.get(UserRecord, user.id)
                now_hash = None if record is None or record.disabled else record.password_hash
            if now_hash is not None and now_hash != checked and verify_password(now_hash, password):
                opened = self._open_session(user, password, now_hash)
        if opened is None:
            raise LoginRefused("the name or the password is not right")
        return user, opened

    def _open_session(self, user: User, password: str, checked: str) -> str | None:
        """A new session token of ``user``, whose password (``password``) was checked
        against the hash ``checked``; ``None`` if that hash is not the user's any more
        or the user was disabled since (then nothing is written)."""
        rehashed = hash_password(password) if needs_rehash(checked) else checked
        with Session(self.engine) as session:
            # A new password or a disabling since the read wins. This write (a row lock on
            # PostgreSQL, the write lock on SQLite) orders the session opened here before
            # or after theirs, never across: one set after it ends it.
            still = session.exec(
                update(UserRecord)
                .where(
                    col(UserRecord.id) == user.id,
                    col(UserRecord.password_hash) == checked,
                    col(UserRecord.disabled).is_(False),
                )
                .values(password_hash=rehashed)
            )
            if still.rowcount != 1:
                return None
            token = secrets.token_urlsafe(32)
            expires = datetime.now(UTC) + timedelta(hours=SESSION_HOURS)
            session.add(
                SessionRecord(token_hash=secret_digest(token), user_id=user.id, expires_at=expires)
            )
            # Sessions never presented again would pile up: the expired ones go now.
            for stale in session.exec(
                select(SessionRecord).where(col(SessionRecord.expires_at) < datetime.now(UTC))
            ):
                session.delete(stale)
            session.commit()
            return token

    def session_user(self, token: str) -> User | None:
        """The user of a live session token, or ``None`` (unknown, expired, disabled)."""
        if not token or len(token) > 200:
            return None
        with Session(self.engine) as session:
            row = session.get(SessionRecord, secret_digest(token))
            if row is None:
                return None
            if as_utc(row.expires_at) <= datetime.now(UTC):
                session.delete(row)
                session.commit()
                return None
            record = session.get(UserRecord, row.user_id)
            return None if record is None or record.disabled else user_of(record)

    def logout(self, token: str) -> None:
        """End the session of ``token`` (nothing if there is none)."""
        with Session(self.engine) as session:
            row = session.get(SessionRecord, secret_digest(token))
            if row is not None:
                session.delete(row)
                session.commit()


def _named(session: Session, name: str) -> UserRecord | None:
    """The user ``name``, or ``None``; a name no account can have (a NUL in it, which
    PostgreSQL refuses even in a lookup) is not looked up."""
    if not _NAME.match(name):  # as names were checked when made ("bob\n" passed, once)
        return None
    return session.exec(select(UserRecord).where(UserRecord.name == name)).first()
