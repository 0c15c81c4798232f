"""What an index's name must be, who may use an index, and the errors of both."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from ragloom_app.db.models import LOCAL_USER
from ragloom_app.errors import UserFacingError

__all__ = [
    "INDEX_NAME_PATTERN",
    "MAX_INDEX_NAME_CHARS",
    "IndexAccess",
    "IndexNameError",
    "UnknownIndexError",
    "checked_index_name",
    "new_store_name",
]

MAX_INDEX_NAME_CHARS = 80
# An index name is shown in lists and paths: printable, no slash or control character, and
# not only digits or spaces (a number would read as an id).
_NAME_CHAR = r"\x00-\x1f\x7f/\\\u200e\u200f\u202a-\u202e\u2066-\u2069"
INDEX_NAME_PATTERN = rf"^[^{_NAME_CHAR}]*[^{_NAME_CHAR}\s0-9][^{_NAME_CHAR}]*$"
"""What an index name must match (the HTTP API's schema says the same)."""


def new_store_name() -> str:
    """A new index's collection name, unlike any other deployment's (64 random bits)."""
    return f"ragloom_{secrets.token_hex(8)}"


class UnknownIndexError(UserFacingError, KeyError):
    """No index has that name or id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown index"


class IndexNameError(UserFacingError, ValueError):
    """A new index's name that the rules refuse, or one taken already: Ragloom's own
    words, which quote the rule (its ``'/'`` and ``'\\'`` are characters, not paths) and
    at most :data:`MAX_INDEX_NAME_CHARS` characters of the name given."""


@dataclass(frozen=True)
class IndexAccess:
    """Who may use an index: its owner writes it; every user reads it if it is shared."""

    owner: str = LOCAL_USER
    shared: bool = True

    def readable_by(self, user_id: str) -> bool:
        """Whether ``user_id`` may search it and list its files."""
        return self.shared or self.owner == user_id

    def writable_by(self, user_id: str, is_admin: bool = False) -> bool:
        """Whether ``user_id`` may add and remove files, change or delete it; an admin
        writes shared indices, never another user's private one."""
        return self.owner == user_id or (is_admin and self.shared)


def checked_index_name(name: str) -> str:
    """``name`` as a new index is named (stripped), or :class:`IndexNameError` saying
    which rule it breaks."""
    name = name.strip()
    if not name:
        raise IndexNameError("an index needs a name")
    # get() takes a name or an id: a name that is a number would name two indices. (A
    # longer one is told the rule below: the words never quote a name past the limit.)
    if len(name) <= MAX_INDEX_NAME_CHARS and name.isdigit():
        raise IndexNameError(f"an index name cannot be a number ({name!r} reads as an id)")
    if len(name) > MAX_INDEX_NAME_CHARS or not re.fullmatch(INDEX_NAME_PATTERN, name):
        raise IndexNameError(
            f"an index name is 1 to {MAX_INDEX_NAME_CHARS} characters, not only digits, "
            "without '/', '\\', control or text-direction characters"
        )
    return name
