"""Errors as a user sees them: what went wrong, in words, and a reference into the log.

What the UI shows (a warning, an answer that failed, a left-out index) never holds a stack
trace, a file path or an endpoint URL: those can tell a stranger how the server is laid
out, where its models live or which hosted service it talks to. They go to the log, under
a short reference that the user's message carries, so whoever reads the log finds the
whole story of what the user saw::

    try:
        ...
    except Exception as exc:
        failure = user_error(exc, "Answering")
        show(failure.message)  # "Answering failed: ... (log reference 3fa2b9c1)"

Errors whose messages are written for users (:class:`UserFacingError`, ``SettingsError``
and the library's own: LLM, loader, embedding, sandbox and retrieval errors) keep their
words, scrubbed of paths and URLs (:func:`scrub`); any other exception is described by
its kind alone.
"""

from __future__ import annotations

import errno
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError

from ragloom.embeddings.base import EmbeddingsError
from ragloom.llms.base import LLMError
from ragloom.loaders import LoaderError
from ragloom.retrieval import RetrievalError
from ragloom.sandbox import SandboxError
from ragloom.stores.base import StoreUnavailableError
from ragloom_app.settings import SettingsError

__all__ = [
    "DISK_FULL_ERRNOS",
    "MAX_MESSAGE_CHARS",
    "DiskFullError",
    "UserError",
    "UserFacingError",
    "disk_full_error",
    "new_reference",
    "reason_for",
    "scrub",
    "user_error",
]

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 300
"""The longest reason a user is shown; the rest of a long message is in the log."""

REFERENCE_HEX_DIGITS = 8
"""Length of a log reference: 8 hex digits, 4 billion values, unique enough per log."""


class UserFacingError(Exception):
    """An error whose message is written for the person who caused it (a setting, an
    unknown name, a question too long): shown as it is, only scrubbed of paths and URLs."""


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The ``errno`` of an :class:`OSError` that says the disk is full (``ENOSPC``) or its
owner's quota is spent (``EDQUOT``)."""


class DiskFullError(UserFacingError):
    """A write the full disk under the data folder refused (:data:`DISK_FULL_ERRNOS`): the
    request was fine, the server needs room. The HTTP API answers it with 507
    ``insufficient_storage``, as it refuses an upload that would fill the disk."""


def disk_full_error(exc: BaseException, doing: str) -> DiskFullError | None:
    """``exc`` as a :class:`DiskFullError` that says ``doing`` (``"the upload could not be
    read"``) failed and why, if it is an :class:`OSError` of :data:`DISK_FULL_ERRNOS`;
    ``None`` for any other error."""
    if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
        return DiskFullError(f"{doing}: {exc.strerror or exc}")
    return None


_WORDED: tuple[type[BaseException], ...] = (
    UserFacingError,
    SettingsError,
    LLMError,
    LoaderError,
    EmbeddingsError,
    SandboxError,
    RetrievalError,
    StoreUnavailableError,
)

# What other exceptions say about themselves, by kind (the first match wins).
_KIND_WORDS: tuple[tuple[type[BaseException], str], ...] = (
    (TimeoutError, "it took too long"),
    (MemoryError, "it ran out of memory"),
    (ConnectionError, "a connection failed"),
    (PermissionError, "a file could not be accessed"),
    (SQLAlchemyError, "the database could not be read or written"),
    (OSError, "a file or device could not be used"),
)
_UNEXPECTED = "something unexpected went wrong inside Ragloom"

_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]*")
# An address without a scheme: a host name (a word starting with a letter, maybe dotted),
# four numbers or a bracketed IPv6 address, then a port; or urllib3's host='...', port=N.
_HOST_PORT = re.compile(
    r"(?:\b(?:[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*|\d{1,3}(?:\.\d{1,3}){3})"
    r"|\[[0-9A-Fa-f:.]+\]):\d{2,5}\b(?:/[^\s'\"<>]*)?"
    r"|\bhost=(['\"])[^'\"]*\1(?:,\s*port=\d+)?"
)
# A quoted path may hold spaces (and the other quote): hidden whole, to its closing quote.
_QUOTED_PATH = re.compile(r"(['\"])(?:[A-Za-z]:[\\/]|\\\\|~/|\.\.?/|/)(?:(?!\1)[^\n])*\1")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:[\\/][^\s'\"]*|\\\\[^\s'\"]+")
# An absolute, home or relative path: a slash not inside a word ("and/or" stays).
_POSIX_PATH = re.compile(r"(?<![\w.~/-])(?:~|\.\.?)?/[^\s'\"(),;]+")
# What user_error ends a message with: kept whole when a long message is cut.
_REFERENCE = re.compile(r" \(log reference [0-9a-f]+\)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c]+")


@dataclass(frozen=True)
class UserError:
    """What to show a user about a failure (``message``) and its ``reference`` in the log."""

    message: str
    reference: str

    def __str__(self) -> str:
        return self.message

    def apology(self) -> str:
        """The message as an answer gives it: "Sorry, answering failed: ..."."""
        return f"Sorry, {self.message[:1].lower()}{self.message[1:]}"

    def ending(self, written: str) -> str:
        """What ends an answer this failure broke off after ``written``: the message in
        brackets after what was written, or the apology when nothing was."""
        return f"\n\n({self.message})" if written.strip() else self.apology()


def new_reference() -> str:
    """A fresh log reference: 8 hex digits."""
    return secrets.token_hex(REFERENCE_HEX_DIGITS // 2)


def scrub(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` without URLs, file paths, control characters or lines after the first,
    at most ``limit`` characters."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _URL.sub(_hidden("[address hidden]"), first)
    first = _HOST_PORT.sub(_hidden("[address hidden]"), first)
    first = _QUOTED_PATH.sub(lambda m: f"{m.group(1)}[path hidden]{m.group(1)}", first)
    first = _WINDOWS_PATH.sub(_hidden("[path hidden]"), first)
    first = _POSIX_PATH.sub(_hidden("[path hidden]"), first)
    first = " ".join(_CONTROL.sub(" ", first).split())
    if len(first) <= limit:
        return first
    reference = _REFERENCE.search(first)
    keep = reference.group(0) if reference else ""
    body = first[: len(first) - len(keep)]
    return body[: limit - 1 - len(keep)].rstrip() + "…" + keep


def _hidden(label: str) -> Callable[[re.Match[str]], str]:
    """A replacement by ``label`` that keeps the punctuation ending the match: the colon
    or period after a path belongs to the sentence."""

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        return label + found[len(found.rstrip(".,:;!?")) :]

    return replace


def reason_for(exc: BaseException, worded: tuple[type[BaseException], ...] = ()) -> str:
    """Why ``exc`` happened, in words a user may see.

    Exceptions of the worded kinds (:class:`UserFacingError`, the library's own, and
    ``worded``) keep their scrubbed message; others are described by their kind.
    """
    if isinstance(exc, _WORDED + worded):
        words = scrub(str(exc))
        if words:
            return words
    for kind, words in _KIND_WORDS:
        if isinstance(exc, kind):
            # The system's own words for a file error ("No space left on device") say what
            # to do and never hold the path (that is ``exc.filename``).
            strerror = getattr(exc, "strerror", None) if isinstance(exc, OSError) else None
            return f"{words}: {scrub(strerror)}" if strerror else words
    return _UNEXPECTED


def user_error(
    exc: BaseException,
    action: str,
    *,
    log: logging.Logger | None = None,
    worded: tuple[type[BaseException], ...] = (),
    level: int = logging.ERROR,
) -> UserError:
    """Log ``exc`` with its stack trace under a new reference; return what to show.

    ``action`` names what failed, as the start of a sentence ("Answering", "Opening the
    conversation"). ``worded`` adds exception kinds whose messages are meant for users
    here (an admin form's ``ValueError``). ``level`` is the log record's: the command
    line, whose log is the terminal the message goes to, logs the trace at ``DEBUG``.
    """
    reference = new_reference()
    (log or logger).log(level, "%s failed [log reference %s]", action, reference, exc_info=exc)
    message = f"{action} failed: {reason_for(exc, worded)} (log reference {reference})"
    return UserError(message, reference)
