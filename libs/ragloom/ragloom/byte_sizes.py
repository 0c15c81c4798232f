"""Byte counts in words for people: every limit and refusal Ragloom states uses this one
form, so a size in one message reads as the same size in another."""

from __future__ import annotations

__all__ = ["size_text"]

_UNITS = ("KB", "MB", "GB", "TB")


def size_text(n: int) -> str:
    """``n`` bytes for a person, in binary units to one decimal, a whole number without
    one: ``"512 bytes"``, ``"97.7 KB"``, ``"64 MB"``, ``"1 GB"``."""
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in _UNITS:
        if round(value, 1) < 1024 or unit == _UNITS[-1]:
            return f"{round(value, 1):g} {unit}"
        value /= 1024
    raise AssertionError("unreachable: the last unit always returns")
