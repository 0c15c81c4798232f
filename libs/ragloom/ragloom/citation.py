"""What an ``[n]`` in an answer refers to: a chunk of a source file, in its JSON form too.

Kept apart from :mod:`ragloom.events` (which re-exports it) because the app's database and
the evidence panel read citations without any event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["Citation"]


@dataclass(frozen=True)
class Citation:
    """What an ``[n]`` in an answer refers to: a chunk of a source file.

    ``score`` is the retrieval score and ``found_by`` each retriever's own score (e.g.
    ``{"vector": 0.62, "fulltext": 7.1}``). ``highlight`` is the ``(start, end)`` span of
    ``text`` that the answer quotes, if it quotes one.
    """

    number: int
    source: str
    page: int | None
    text: str
    chunk_id: str
    score: float = 0.0
    start: int = 0
    end: int = 0
    found_by: dict[str, float] = field(default_factory=dict)
    highlight: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``ask --json``, the database)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        """A citation from its JSON form, as this or an earlier version stored it: keys it
        does not know are ignored, fields added since take their defaults, and the
        highlight, a list once it went through JSON, is a tuple again.

        Raises ``ValueError`` when a field every version stored is missing."""
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        missing = [name for name in ("number", "source", "text", "chunk_id") if name not in values]
        if missing:
            raise ValueError(f"a stored citation lacks {', '.join(missing)}")
        values.setdefault("page", None)
        highlight = values.get("highlight")
        if isinstance(highlight, list | tuple) and len(highlight) == 2:
            values["highlight"] = (highlight[0], highlight[1])
        elif highlight is not None:
            values["highlight"] = None
        values["found_by"] = dict(values.get("found_by") or {})
        return cls(**values)
