"""The errors a test raises to stand for PostgreSQL being away, as the libraries raise them."""

from __future__ import annotations

import psycopg


def postgres_away(wrapper: str = "(psycopg.OperationalError) connection failed") -> Exception:
    """psycopg's error for a server that cannot be reached, as a library (SQLAlchemy, a
    pool, procrastinate) hands it on: under an error of its own, with ``__cause__`` set."""
    try:
        raise psycopg.OperationalError("connection to server at 127.0.0.1 failed")
    except psycopg.OperationalError as cause:
        try:
            raise RuntimeError(wrapper) from cause
        except RuntimeError as exc:
            return exc
