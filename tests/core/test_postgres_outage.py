"""``outage_words`` tells PostgreSQL being away (wait and try again) from an error of a
server that answered (waiting would not mend it), through any wrapping of psycopg's error."""

from __future__ import annotations

import pytest

from ragloom.postgres_outage import outage_words

psycopg = pytest.importorskip("psycopg")
errors = psycopg.errors


def _raised_from(cause: BaseException) -> RuntimeError:
    """``cause`` as a pool or a queue library hands it on: wrapped, with ``__cause__``."""
    try:
        try:
            raise cause
        except BaseException as exc:
            raise RuntimeError("the library's own words") from exc
    except RuntimeError as wrapped:
        return wrapped


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (psycopg.OperationalError("no reply at all"), "the connection was refused or broke off"),
        (errors.ConnectionFailure("08006"), "the connection was refused or broke off"),
        (errors.AdminShutdown("terminating connection"), "it was shutting down"),
        (errors.CrashShutdown("crash"), "it was shutting down"),
        (errors.CannotConnectNow("the database system is starting up"), "it was starting up"),
    ],
)
def test_a_server_that_is_away_is_an_outage(error: BaseException, words: str) -> None:
    assert outage_words(error) == words
    assert outage_words(_raised_from(error)) == words


@pytest.mark.parametrize(
    "error",
    [
        errors.LockNotAvailable("could not obtain lock"),  # an OperationalError: 55P03
        errors.QueryCanceled("canceling statement due to statement timeout"),  # 57014
        errors.UndefinedTable("relation does not exist"),  # a ProgrammingError
        errors.UniqueViolation("duplicate key"),  # an IntegrityError
        ConnectionRefusedError("not psycopg's"),
        ValueError("ours"),
    ],
)
def test_an_answer_of_a_reachable_server_or_another_error_is_not(error: BaseException) -> None:
    assert outage_words(error) is None
    assert outage_words(_raised_from(error)) is None
