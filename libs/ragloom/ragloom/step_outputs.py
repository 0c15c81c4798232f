"""Typed outputs of the steps every mode may stream: the check before answering
(:class:`QuestionCheck`) and a mode chosen by another (:class:`ModeChoice`).

:mod:`ragloom.events` re-exports both and turns them into JSON at the ``ask --json`` edge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ModeChoice", "QuestionCheck"]


@dataclass(frozen=True)
class QuestionCheck:
    """What the check before answering found: the output of the ``precheck`` step.

    ``terms`` are the specifics of the question that were looked up (identifiers, options,
    versions, quoted phrases, rare words: :mod:`ragloom.qa.specifics`); ``missing`` those no
    readable index holds; ``not_in_passages`` the strict ones the retrieved passages do not
    hold, when they hold none; ``declined`` whether the mode answered without the model.
    """

    terms: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    not_in_passages: list[str] = field(default_factory=list)
    declined: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the ``precheck`` of ``ask --json`` and the step's output)."""
        return asdict(self)


@dataclass(frozen=True)
class ModeChoice:
    """Which mode answers a question, chosen by another (the ``auto`` mode), and why: the
    output of its ``route`` and ``escalate`` steps.

    ``mode`` is the chosen mode's id; ``kind`` what the question was taken for
    (:data:`ragloom.qa.routing.QuestionKind`); ``reason`` why, in words; ``escalated_from``
    the mode whose answer did not pass, when this is the second try; ``tokens_spent``
    what the question had cost before this choice.
    """

    mode: str
    reason: str
    kind: str = ""
    escalated_from: str | None = None
    tokens_spent: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the step's output in ``ask --json``)."""
        return asdict(self)
