"""An answer as HTML with each checked sentence marked: found in its sources, or not.

The grounding check (:mod:`ragloom.qa.grounding`) reports per sentence whether its
specifics occur in the passages it cites. Here the answer's Markdown is rendered by
:func:`~ragloom_app.ui.model_text.model_html` as always, and only then marked: the marks
wrap runs of the rendered, already escaped *text* between tags, never a tag, so the
HTML stays well formed and holds nothing the model wrote as markup. Sentences are found
in the rendered text by counting words: sentence ``i`` covers the words after those of
the sentences before it, as :func:`model_html` renders each one.

A sentence with unsupported specifics gets ``rl-unsupported`` and a visible "not in its
sources" mark whose title names them; one whose specifics were all found gets
``rl-supported`` and a title naming the passages; a sentence with nothing to check is
left as it is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ragloom.grounding_report import GroundingReport, SentenceSupport
from ragloom_app.ui.model_text import model_html

__all__ = ["STATUS_LABELS", "grounded_answer_html", "grounding_summary"]

STATUS_LABELS = {
    "supported": "every specific claim found in the passages it cites",
    "partly": "some claims are not in the passages they cite (marked)",
    "unsupported": "no claim found in the passages it cites",
    "no_citations": "the answer cites no passage",
}
"""How each verdict of the check reads in the steps panel."""

_TAG = re.compile(r"(<[^>]*>)")
_WORD = re.compile(r"[^\W_]+")


def _words(rendered: str) -> int:
    """How many words the rendered HTML shows (its text, entities decoded)."""
    text = "".join(part for part in _TAG.split(rendered) if not part.startswith("<"))
    return len(_WORD.findall(html.unescape(text)))


def _mark(sentence: SentenceSupport) -> tuple[str, str] | None:
    """The class and title of a sentence's mark, or ``None`` for no mark."""
    if sentence.unsupported:
        return "rl-unsupported", f"Not in the passages it cites: {', '.join(sentence.unsupported)}"
    if sentence.supported and sentence.checked:
        found = ", ".join(f"[{n}]" for n in sentence.supported_by) or "the question"
        return "rl-supported", f"Found in {found}"
    return None


def _owners(answer: str, sentences: Sequence[SentenceSupport]) -> list[int | None]:
    """For each word the rendered answer shows, the index of its sentence (or ``None``)."""
    owners: list[int | None] = []
    position = 0
    for index, sentence in enumerate(sentences):
        at = answer.find(sentence.text, position)
        if at < 0:
            continue
        owners += [None] * _words(model_html(answer[position:at]))
        owners += [index] * _words(model_html(sentence.text))
        position = at + len(sentence.text)
    return owners


class _Marker:
    """Wraps the words of each marked sentence, run by run, in the rendered text."""

    def __init__(self, answer: str, report: GroundingReport) -> None:
        chosen = [_mark(sentence) for sentence in report.sentences]
        self.opening = [
            f'<span class="rl-claim {mark[0]}" title="{html.escape(mark[1])}">' if mark else ""
            for mark in chosen
        ]
        # After an unsupported sentence's last word: a visible mark naming what is missing.
        self.closing = [
            f'<sup class="rl-mark" title="{html.escape(mark[1])}">not in its sources</sup>'
            if mark and mark[0] == "rl-unsupported"
            else ""
            for mark in chosen
        ]
        self.owner_of = _owners(answer, report.sentences)
        self.last_word = {owner: n for n, owner in enumerate(self.owner_of) if owner is not None}
        self.seen = 0

    def _owner(self, number: int) -> int | None:
        return self.owner_of[number] if number < len(self.owner_of) else None

    def _run(self, text: str, owner: int | None, last: int) -> str:
        body = text.rstrip()
        space = html.escape(text[len(body) :], quote=False)
        escaped = html.escape(body, quote=False)
        if owner is None or not self.opening[owner] or not body:
            return escaped + space
        closing = self.closing[owner] if self.last_word.get(owner) == last else ""
        return f"{self.opening[owner]}{escaped}</span>{closing}{space}"

    def text(self, part: str) -> str:
        """One escaped text run between tags, its sentences' words wrapped."""
        plain = html.unescape(part)
        words = list(_WORD.finditer(plain))
        if not words:
            return part
        pieces = [html.escape(plain[: words[0].start()], quote=False)]
        start, owner = words[0].start(), self._owner(self.seen)
        for offset, word in enumerate(words[1:], 1):
            current = self._owner(self.seen + offset)
            if current != owner:
                pieces.append(self._run(plain[start : word.start()], owner, self.seen + offset - 1))
                start, owner = word.start(), current
        pieces.append(self._run(plain[start:], owner, self.seen + len(words) - 1))
        self.seen += len(words)
        return "".join(pieces)


def grounded_answer_html(answer: str, report: GroundingReport | None) -> str:
    """``answer`` as :func:`model_html` renders it, its checked sentences marked (see the
    module docstring); unmarked when there is no report or the answer became a decline."""
    rendered = model_html(answer)
    if report is None or report.declined or not report.sentences:
        return rendered
    marker = _Marker(answer, report)
    return "".join(
        part if not part or part.startswith("<") else marker.text(part)
        for part in _TAG.split(rendered)
    )


def grounding_summary(report: GroundingReport | None) -> str:
    """One line for the steps panel: the check's verdict, in words (empty: unchecked)."""
    if report is None:
        return ""
    verdict = STATUS_LABELS.get(report.status, report.status)
    if report.declined:
        verdict += "; declined"
    if report.unchecked_sentences:
        verdict += f"; {report.unchecked_sentences} sentences not checked (limit)"
    return f"Grounding: {verdict}."
