"""Password hashing: argon2id (argon2-cffi), the parameters of RFC 9106's second
recommended profile: 3 passes over 64 MiB with 4 lanes, 16-byte salt, 32-byte hash.

That profile is for machines without gigabytes to spare per login; on this project's
2-core reference machine a verify takes the time ``benchmarks/api.py`` reports. The hash
string holds its parameters, so raising them later rehashes each password at its next
login (:meth:`PasswordHasher.needs_rehash`).
"""

from __future__ import annotations

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

__all__ = [
    "MAX_PASSWORD_CHARS",
    "MIN_PASSWORD_CHARS",
    "PasswordError",
    "hash_password",
    "needs_rehash",
    "verify_password",
]

MIN_PASSWORD_CHARS = 8
"""The shortest password an account may have."""
MAX_PASSWORD_CHARS = 1024
"""The longest: argon2 takes any length, but a megabyte per login attempt is a cheap way
to keep a server busy."""

_HASHER = PasswordHasher.from_parameters(profiles.RFC_9106_LOW_MEMORY)


class PasswordError(ValueError):
    """A password an account may not have (too short, too long)."""


def check_password(password: str) -> None:
    """Raise :class:`PasswordError` for a password outside the bounds."""
    if len(password) < MIN_PASSWORD_CHARS:
        raise PasswordError(f"a password has at least {MIN_PASSWORD_CHARS} characters")
    if len(password) > MAX_PASSWORD_CHARS:
        raise PasswordError(f"a password has at most {MAX_PASSWORD_CHARS} characters")


def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` (checked first: :func:`check_password`)."""
    check_password(password)
    return _HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Whether ``password`` is the one ``password_hash`` was made from; never raises."""
    if len(password) > MAX_PASSWORD_CHARS:
        return False
    try:
        return _HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether the hash was made with other parameters than today's."""
    try:
        return _HASHER.check_needs_rehash(password_hash)
    except InvalidHashError:
        return True
