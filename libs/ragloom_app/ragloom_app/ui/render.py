"""Turn answers, citations and file listings into the HTML and Markdown the UI shows.

Pure functions without gradio, so they can be tested alone. Everything that comes from a
document, a file name or a model is escaped: a chunk of an uploaded HTML-looking file must
show as text, never run as markup in the user's browser.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any

from ragloom.byte_sizes import size_text
from ragloom.events import (
    AnswerRecord,
    Citation,
    ModeChoice,
    PlanCreated,
    PlanItem,
    StepFinished,
    StepStarted,
)
from ragloom_app.conversations import StoredMessage
from ragloom_app.errors import scrub
from ragloom_app.ui.grounding_marks import grounded_answer_html, grounding_summary
from ragloom_app.ui.model_text import model_html

__all__ = [
    "EVIDENCE_PLACEHOLDER",
    "MAX_SHOWN_LABEL_CHARS",
    "MAX_SHOWN_PLAN_ITEMS",
    "chat_history",
    "citation_heading",
    "conversation_choices",
    "evidence_html",
    "found_by_text",
    "highlighted_html",
    "indices_html",
    "last_citations",
    "left_out_html",
    "outcomes_html",
    "plugins_html",
    "sources_html",
    "step_status",
    "table_html",
    "usage_html",
]

EVIDENCE_PLACEHOLDER = (
    '<div class="rl-empty">The passages an answer cites appear here, '
    "with their file and page.</div>"
)

MAX_SHOWN_PLAN_ITEMS = 50
"""Most steps of one plan the steps panel lists (a built-in plan has at most 12); the rest
are counted. A plugin mode's plan may be of any length."""
MAX_SHOWN_LABEL_CHARS = 300
"""Most characters of a step's or plan item's id and label shown; longer ones are cut
with an ellipsis (the ``ask --json`` record keeps them whole)."""

_STATUS_LABELS = {
    "indexed": "indexed",
    "skipped": "skipped",
    "failed": "failed",
    "indexing": "indexing…",
    "queued": "queued",
}


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _as_mapping(item: Any) -> Mapping[str, Any]:
    """A citation or outcome as a mapping, whether it is a dataclass or a stored dict."""
    if is_dataclass(item) and not isinstance(item, type):
        return asdict(item)
    return item


def _badge(status: str) -> str:
    label = _STATUS_LABELS.get(status, status)
    return f'<span class="rl-badge rl-{_esc(status)}">{_esc(label)}</span>'


def citation_heading(citation: Mapping[str, Any]) -> str:
    """``[n] source, page p`` (plain text; the page only when the source has pages)."""
    page = citation.get("page")
    where = f", page {page}" if page not in (None, "") else ""
    return f"[{citation.get('number', '?')}] {citation.get('source', '?')}{where}"


_RETRIEVER_LABELS = {"fulltext": "full-text"}


def _score(value: float) -> str:
    # Cosine similarities live in [-1, 1] and need two decimals; BM25 scores need one.
    return f"{value:.2f}" if abs(value) < 1 else f"{value:.1f}"


def found_by_text(found_by: Mapping[str, Any] | None) -> str:
    """``found by vector 0.62 · full-text 7.1``: which retrievers found a chunk, and how well."""
    parts = [
        f"{_RETRIEVER_LABELS.get(str(name), str(name))} {_score(float(score))}"
        for name, score in (found_by or {}).items()
        if isinstance(score, int | float)
    ]
    return f"found by {' · '.join(parts)}" if parts else ""


def _span(highlight: Any, length: int) -> tuple[int, int] | None:
    """A stored ``(start, end)`` (a list once it went through JSON) if it fits the text."""
    if not isinstance(highlight, list | tuple) or len(highlight) != 2:
        return None
    start, end = highlight
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length):
        return None
    return start, end


def highlighted_html(text: str, highlight: Any = None) -> str:
    """``text`` escaped, with the ``highlight`` span wrapped in ``<mark>``; outer space trimmed."""
    span = _span(highlight, len(text))
    if span is None:
        return _esc(text.strip())
    start, end = span
    before, quoted, after = text[:start].lstrip(), text[start:end], text[end:].rstrip()
    return f"{_esc(before)}<mark>{_esc(quoted)}</mark>{_esc(after)}"


def evidence_html(
    citations: Iterable[Any] | None, *, empty: str = "This answer cites no passage."
) -> str:
    """The evidence panel: per cited chunk its heading, the retrievers that found it and its
    text with the quoted span marked."""
    items = [_as_mapping(c) for c in citations or []]
    if not items:
        return f'<div class="rl-empty">{_esc(empty)}</div>'
    cards = []
    for citation in items:
        # The fused retrieval score means little to a reader: a tooltip, not a column.
        score = citation.get("score")
        title = (
            f' title="retrieval score {float(score):.3f}"' if isinstance(score, int | float) else ""
        )
        found = found_by_text(citation.get("found_by"))
        found_line = f'<div class="rl-found-by">{_esc(found)}</div>' if found else ""
        text = highlighted_html(str(citation.get("text", "")), citation.get("highlight"))
        cards.append(
            '<div class="rl-cite">'
            f'<div class="rl-cite-head"{title}>{_esc(citation_heading(citation))}</div>'
            f'{found_line}<div class="rl-cite-text">{text}</div>'
            "</div>"
        )
    return f'<div class="rl-evidence">{"".join(cards)}</div>'


def usage_html(record: AnswerRecord) -> str:
    """One line of cost (LLM calls, tokens, seconds) and the timed steps below it.

    HTML, every part of it escaped: a plan, a tool name and a step's error are model text.
    Drawn from the record's types alone, so every mode's plan and steps look the same.
    """
    usage = record.usage
    calls, prompt, completion = usage.llm_calls, usage.prompt_tokens, usage.completion_tokens
    total = (
        f"<strong>{calls} LLM call{'s' if calls != 1 else ''}, {prompt + completion:,} tokens, "
        f"{usage.seconds:.1f} s</strong> — {prompt:,} prompt"
    )
    # Evaluated < prompt means llama.cpp reused its cache for the rest: worth seeing.
    if usage.prompt_tokens_evaluated != prompt:
        total += f" ({usage.prompt_tokens_evaluated:,} evaluated)"
    total += f", {completion:,} generated; mode <code>{_esc(record.mode)}</code>"
    items = []
    for step in record.steps:
        if isinstance(step, PlanCreated):
            items.append(_plan_item(step))
        elif isinstance(step, StepFinished):
            name = f"<code>{_esc(_bounded(step.name))}</code>"
            if step.error:
                items.append(
                    f"<li>{name} failed after {step.seconds:.2f} s: {_esc(step.error)}</li>"
                )
            elif isinstance(step.output, ModeChoice):  # auto's route and escalate steps
                choice = step.output
                items.append(
                    f"<li>{name} <code>{_esc(choice.mode)}</code>: "
                    f"{_esc(_bounded(choice.reason))}</li>"
                )
            else:
                items.append(f"<li>{name} {step.seconds:.2f} s</li>")
    steps = f'<ul class="rl-steps">{"".join(items)}</ul>' if items else ""
    summary = grounding_summary(record.grounding)
    grounding = f'<p class="rl-grounding">{_esc(summary)}</p>' if summary else ""
    return f'<div class="rl-usage"><p>{total}</p>{grounding}{steps}</div>'


def _bounded(text: str, limit: int = MAX_SHOWN_LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plan_step(item: PlanItem) -> str:
    """A step's id and label; one the mode dropped is struck through, with why, and one
    it added says so."""
    label = _esc(_bounded(item.label))
    if item.status == "dropped":
        label = f"<s>{label}</s> — not run: {_esc(_bounded(item.reason))}"
    elif item.status == "added":
        label += f" — added: {_esc(_bounded(item.reason))}"
    return f"<li><code>{_esc(_bounded(item.id))}</code> {label}</li>"


def _plan_item(plan: PlanCreated) -> str:
    """A plan as a list item: each step's id and the label its mode chose, at most
    ``MAX_SHOWN_PLAN_ITEMS`` of them."""
    repaired = " (repaired once)" if plan.repaired else ""
    shown = plan.steps[:MAX_SHOWN_PLAN_ITEMS]
    calls = [_plan_step(item) for item in shown]
    if len(plan.steps) > len(shown):
        hidden = len(plan.steps) - len(shown)
        calls.append(
            f"<li>… and {hidden:,} more step{'s' if hidden != 1 else ''}, not shown "
            f"(at most {MAX_SHOWN_PLAN_ITEMS} are)</li>"
        )
    return f"<li><strong>Plan</strong>{repaired}:<ul>{''.join(calls)}</ul></li>"


def step_status(step: StepStarted) -> str:
    """The status line the chat shows while ``step`` runs: the label its mode chose,
    ending in one ellipsis."""
    return _bounded(step.label).rstrip("…") + "…"


def chat_history(messages: Iterable[StoredMessage]) -> list[dict[str, str]]:
    """Stored messages as gradio 6 Chatbot messages (only ``role`` and ``content``), their
    Markdown rendered to HTML that loads nothing (:func:`~ragloom_app.ui.model_text.model_html`),
    an answer's sentences marked as its stored grounding report says, as when it came."""
    return [
        {
            "role": m.role,
            "content": grounded_answer_html(m.content, m.grounding)
            if m.role == "assistant"
            else model_html(m.content),
        }
        for m in messages
        if m.role in ("user", "assistant")
    ]


def last_citations(messages: Sequence[StoredMessage]) -> list[Citation] | None:
    """The citations of the last assistant message, or ``None`` if there is none."""
    for message in reversed(messages):
        if message.role == "assistant":
            return list(message.citations)
    return None


def conversation_choices(conversations: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(label, id) pairs for the conversation selector, newest first, labels unique."""
    choices: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for conversation in conversations:
        title = " ".join(str(conversation.get("title") or "Untitled").split())
        # Gradio shows labels only; two equal titles would be indistinguishable.
        seen[title] = seen.get(title, 0) + 1
        label = title if seen[title] == 1 else f"{title} ({seen[title]})"
        choices.append((label, str(conversation["id"])))
    return choices


def table_html(headers: Sequence[str], rows: Sequence[Sequence[str]], empty: str) -> str:
    """A table of ``rows`` (cells already escaped HTML) under ``headers``; ``empty`` (text)
    when there are none."""
    if not rows:
        return f'<div class="rl-empty">{_esc(empty)}</div>'
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="rl-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def outcomes_html(outcomes: Iterable[Any]) -> str:
    """What became of each uploaded file: a one-line summary and a table."""
    items = [_as_mapping(o) for o in outcomes]
    counts = {
        status: sum(1 for o in items if o.get("status") == status)
        for status in ("indexed", "skipped", "failed", "cancelled")
    }
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no files"
    rows = [
        [
            _esc(o.get("name", o.get("file"))),
            _badge(str(o.get("status"))),
            _esc(o.get("chunks", 0)) if o.get("status") not in ("failed", "cancelled") else "",
            _esc(scrub(o.get("reason") or "")),
        ]
        for o in items
    ]
    table = table_html(["File", "Status", "Chunks", "Reason"], rows, "No files were indexed.")
    return f'<div class="rl-summary">{_esc(summary)}</div>{table}'


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _size(size: Any) -> str:
    return size_text(int(size)) if isinstance(size, int | float) and size > 0 else ""


def sources_html(sources: Iterable[Mapping[str, Any]], index_name: str | None = None) -> str:
    """The files of an index with their status, chunks, size and failure reason."""
    items = list(sources)
    rows = [
        [
            _esc(s.get("name")),
            _badge(str(s.get("status"))),
            _esc(s.get("chunks", 0)),
            _esc(_size(s.get("size"))),
            _esc(scrub(s.get("reason") or "")),
            _esc(str(s.get("updated_at") or "")[:16].replace("T", " ")),
        ]
        for s in items
    ]
    empty = f"No files in {index_name!r} yet." if index_name else "No files yet."
    table = table_html(["File", "Status", "Chunks", "Size", "Reason", "Updated (UTC)"], rows, empty)
    if not items:
        return table
    indexed = sum(1 for s in items if s.get("status") == "indexed")
    chunks = sum(int(s.get("chunks") or 0) for s in items if s.get("status") == "indexed")
    summary = f"{_plural(len(items), 'file')}, {indexed} indexed, {_plural(chunks, 'chunk')}"
    return f'<div class="rl-summary">{_esc(summary)}</div>{table}'


def indices_html(
    indices: Iterable[Mapping[str, Any]], unavailable: Mapping[str, str] | None = None
) -> str:
    """The indices with their files, chunking, file types and visibility, then those left
    out (``IndexManager.unavailable``) with the reason."""
    rows = [
        [
            _esc(i.get("name")),
            _esc(_plural(int(i.get("files") or 0), "file")),
            _esc(i.get("chunk_size", "")),
            _esc(i.get("chunk_overlap", "")),
            _esc(" ".join(i.get("extensions") or [])),
            _esc(i.get("visibility", "")),
            _esc(i.get("owner", "")),
        ]
        for i in indices
    ]
    headers = ["Index", "Files", "Chunk size", "Overlap", "File types", "Visibility", "Owner"]
    return table_html(headers, rows, "There is no index yet.") + left_out_html(unavailable)


def left_out_html(unavailable: Mapping[str, str] | None) -> str:
    """The indices left out at startup and why (empty when there are none)."""
    missing = "".join(
        f"<li>{_esc(name)}: {_esc(scrub(reason))}</li>"
        for name, reason in (unavailable or {}).items()
    )
    return f'<div class="rl-summary">Indices left out</div><ul>{missing}</ul>' if missing else ""


def plugins_html(
    plugins: Iterable[Mapping[str, Any]], unavailable: Mapping[str, str] | None = None
) -> str:
    """The plugins (``PluginInfo.to_dict()`` shapes): version, what each adds, errors."""
    rows = []
    for plugin in plugins:
        added = [
            f"{kind.replace('_', ' ')}: {', '.join(ids)}"
            for kind, ids in (plugin.get("registered") or {}).items()
            if ids
        ]
        status = (
            "disabled" if plugin.get("disabled") else "failed" if plugin.get("error") else "loaded"
        )
        # Load errors may name files of the server: the log has them whole.
        notes = [plugin.get("error"), *(plugin.get("warnings") or [])]
        notes = [scrub(note) for note in notes if note]
        rows.append(
            [
                _esc(plugin.get("name")),
                _esc(plugin.get("version") or ""),
                "<br>".join(_esc(line) for line in added) or "—",
                _badge(status),
                "<br>".join(_esc(note) for note in notes if note),
            ]
        )
    headers = ["Plugin", "Version", "Registers", "Status", "Details"]
    return table_html(headers, rows, "No plugins installed.") + left_out_html(unavailable)
