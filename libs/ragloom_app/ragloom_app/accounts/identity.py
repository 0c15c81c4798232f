"""Who a request acts for, how the secrets that say so are kept, and the accounts'
refusals: what the account store and its API keys share."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from ragloom_app.db.models import UserRecord
from ragloom_app.errors import UserFacingError

__all__ = ["AccountError", "User", "as_utc", "secret_digest", "user_of"]


class AccountError(UserFacingError, ValueError):
    """A name, password or key the accounts refuse, in words for the person."""


@dataclass(frozen=True)
class User:
    """Who a request acts for."""

    id: str
    name: str
    is_admin: bool = False


def user_of(record: UserRecord) -> User:
    """The user of a database row."""
    return User(record.id, record.name, record.is_admin)


def secret_digest(secret: str) -> str:
    """What is stored of a session token or an API key: its SHA-256 (they are 32 random
    bytes, so no slow hash is needed to keep them from being guessed back)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def as_utc(moment: datetime) -> datetime:
    """``moment`` with its time zone: SQLite gives back naive datetimes, written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
