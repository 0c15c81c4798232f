"""What a ``gr.Markdown`` value shows, for tests that a name in it shows as written: the
Markdown rendered as CommonMark (markdown-it) and the text a reader sees of it."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

__all__ = ["markdown_html", "shown_text"]

_TAG = re.compile(r"<[^>]*>")


def markdown_html(markdown: str) -> str:
    """``markdown`` rendered as CommonMark, raw HTML kept (as gradio's Markdown keeps it)."""
    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def shown_text(markdown: str) -> str:
    """The text a reader sees of ``markdown``: its rendering without tags, character
    references read."""
    return html.unescape(_TAG.sub("", markdown_html(markdown))).strip()
