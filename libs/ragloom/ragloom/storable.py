"""Text as every store Ragloom writes to can keep it."""

from __future__ import annotations

__all__ = ["storable_text"]


def storable_text(text: str) -> str:
    """``text`` with each NUL (U+0000) as U+FFFD: PostgreSQL's ``text`` and ``jsonb`` cannot
    hold NUL, and one character for one keeps every offset (citations point into text by
    character)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text
