"""Whether a psycopg error says that PostgreSQL could not be reached, and in which words.

Shared by whatever talks to PostgreSQL through psycopg and must tell an outage (try again
once the server is back) from an error of a server that answered (a bad statement, a
lock or statement timeout, a conflict), which waiting would not mend.
"""

from __future__ import annotations

__all__ = ["outage_words"]

# PostgreSQL's SQLSTATEs of a server going away or not back yet; the class of connection
# exceptions ("08") and errors with no SQLSTATE at all (no reply) are outages too.
_STATE_WORDS = {
    "57P01": "it was shutting down",
    "57P02": "it was shutting down",
    "57P03": "it was starting up",
}


def outage_words(exc: BaseException) -> str | None:
    """Why PostgreSQL could not be reached, if ``exc`` (or the error it was raised from: a
    pool or a queue library wraps the driver's) is psycopg's word for a server that is
    away; else ``None``."""
    try:
        import psycopg  # imported here: only a caller that talks through psycopg asks
    except ImportError:  # no PostgreSQL driver installed (a laptop): no error of it either
        return None

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__
    if not isinstance(cause, psycopg.OperationalError):
        return None
    state = cause.sqlstate
    if state is None or state.startswith("08"):
        return "the connection was refused or broke off"
    return _STATE_WORDS.get(state)
