"""What the grounding check found: per sentence, its specifics and which passages hold them.

Typed results of :func:`ragloom.qa.grounding.check_grounding`, carried by the
:class:`~ragloom.events.GroundingChecked` event and kept in
:class:`~ragloom.events.AnswerRecord` (``grounding`` in ``ask --json``). Kept apart from
:mod:`ragloom.qa` so that :mod:`ragloom.events` can hold them without importing the
question-answering code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "MAX_STORED_SENTENCES",
    "GroundingReport",
    "GroundingStatus",
    "SentenceSupport",
    "Specific",
    "SpecificKind",
]

MAX_STORED_SENTENCES = 200
"""Most sentences :meth:`GroundingReport.from_dict` reads back (the check keeps 60)."""
MAX_STORED_ITEMS = 200
"""Most specifics, passages or unsupported names read back for one sentence."""


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"a stored grounding report's {key!r} is not text")
    return value


def _texts(data: Mapping[str, Any], key: str) -> list[str]:
    values = data.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"a stored grounding report's {key!r} is not a list of text")
    return values[:MAX_STORED_ITEMS]


def _numbers(data: Mapping[str, Any], key: str) -> list[int]:
    values = data.get(key, [])
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise ValueError(f"a stored grounding report's {key!r} is not a list of numbers")
    return values[:MAX_STORED_ITEMS]


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"a stored {what} is a {type(value).__name__}, not an object")
    return value


SpecificKind = Literal["number", "version", "identifier", "option", "quote"]
"""What a specific is: a number (``5``, ``1e6``, ``66%``), a version (``3.35.0``), a code
identifier (``sqlite3_open_v2``, ``xRandomness``, ``carray()``, ``.recover``), an option
(``--foo``, ``-x``, ``PRAGMA foo``) or a quoted phrase."""

GroundingStatus = Literal["supported", "partly", "unsupported", "no_citations"]
"""An answer's verdict: every specific found (``supported``); some sentences' specifics
found and others' not (``partly``); no sentence's specifics found (``unsupported``); the
answer cites no passage at all (``no_citations``, never counted as supported)."""


@dataclass(frozen=True)
class Specific:
    """One specific claim of a sentence, as the answer wrote it, and what kind it is."""

    text: str
    kind: SpecificKind

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"text": self.text, "kind": self.kind}

    @classmethod
    def from_dict(cls, data: Any) -> Specific:
        """A specific from its JSON form; ``ValueError`` if it is not one."""
        data = _mapping(data, "specific")
        kind = _text(data, "kind")
        if kind not in get_args(SpecificKind):
            raise ValueError(f"a stored specific has the unknown kind {kind!r}")
        return cls(_text(data, "text"), kind)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SentenceSupport:
    """How one sentence of an answer stands against the passages it cites.

    ``text`` is the sentence as it stands in the answer (its ``[n]`` marks included);
    ``cited`` the passage numbers it cites (none: it was checked against every passage the
    answer cites); ``specifics`` what it claims that can be checked; ``unsupported`` the
    specifics found neither in those passages, nor in the question, nor in a tool's result;
    ``supported_by`` the passages that hold at least one of its specifics. ``supported`` is
    true when nothing is unsupported, nothing was left unchecked and the answer cites some
    passage. ``unchecked`` counts the specifics past ``MAX_SPECIFICS_PER_SENTENCE``.
    """

    text: str
    supported: bool
    specifics: list[Specific] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    supported_by: list[int] = field(default_factory=list)
    unchecked: int = 0

    @property
    def checked(self) -> bool:
        """Whether the sentence claims anything the check could look up."""
        return bool(self.specifics) or self.unchecked > 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (one entry of ``grounding.sentences`` in ``ask --json``)."""
        return {
            "text": self.text,
            "supported": self.supported,
            "specifics": [s.to_dict() for s in self.specifics],
            "unsupported": list(self.unsupported),
            "cited": list(self.cited),
            "supported_by": list(self.supported_by),
            "unchecked": self.unchecked,
        }

    @classmethod
    def from_dict(cls, data: Any) -> SentenceSupport:
        """A sentence's support from its JSON form; ``ValueError`` if it is not one."""
        data = _mapping(data, "sentence")
        specifics = data.get("specifics", [])
        unchecked = data.get("unchecked", 0)
        if not isinstance(specifics, list) or not isinstance(unchecked, int):
            raise ValueError("a stored sentence's specifics or unchecked count is malformed")
        return cls(
            text=_text(data, "text"),
            supported=bool(data.get("supported")),
            specifics=[Specific.from_dict(s) for s in specifics[:MAX_STORED_ITEMS]],
            unsupported=_texts(data, "unsupported"),
            cited=_numbers(data, "cited"),
            supported_by=_numbers(data, "supported_by"),
            unchecked=max(0, unchecked),
        )


@dataclass(frozen=True)
class GroundingReport:
    """The grounding check of one answer: its verdict and each sentence's support.

    ``declined``: the answer was replaced by a decline (its sentences are the ones the
    model wrote). ``unchecked_sentences`` counts the sentences past the check's limits
    (``MAX_GROUNDED_SENTENCES``, ``MAX_GROUNDED_ANSWER_CHARS``); an answer with any is at
    best ``partly`` supported.
    """

    status: GroundingStatus
    sentences: list[SentenceSupport] = field(default_factory=list)
    unchecked_sentences: int = 0
    declined: bool = False

    @property
    def supported(self) -> bool:
        """Whether the answer passes: cited, and every specific found."""
        return self.status == "supported"

    def unsupported_specifics(self) -> list[str]:
        """Every unsupported specific of the answer, each once, in order."""
        return list(dict.fromkeys(text for s in self.sentences for text in s.unsupported))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``grounding`` in ``ask --json``."""
        return {
            "status": self.status,
            "declined": self.declined,
            "unchecked_sentences": self.unchecked_sentences,
            "sentences": [s.to_dict() for s in self.sentences],
        }

    @classmethod
    def from_dict(cls, data: Any) -> GroundingReport:
        """A report from its JSON form (as :meth:`to_dict` wrote it, e.g. into the app's
        database); ``ValueError`` for anything else. At most
        :data:`MAX_STORED_SENTENCES` sentences are read back."""
        data = _mapping(data, "grounding report")
        status = _text(data, "status")
        if status not in get_args(GroundingStatus):
            raise ValueError(f"a stored grounding report has the unknown status {status!r}")
        sentences = data.get("sentences", [])
        unchecked = data.get("unchecked_sentences", 0)
        if not isinstance(sentences, list) or not isinstance(unchecked, int):
            raise ValueError("a stored grounding report's sentences are malformed")
        return cls(
            status=status,  # type: ignore[arg-type]
            sentences=[SentenceSupport.from_dict(s) for s in sentences[:MAX_STORED_SENTENCES]],
            unchecked_sentences=max(0, unchecked),
            declined=bool(data.get("declined")),
        )
