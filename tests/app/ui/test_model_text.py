"""Model text as HTML: Markdown shows as before, but nothing in it can load a resource."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom_app.conversations import StoredMessage
from ragloom_app.ui.model_text import literal_markdown, model_html, plain_html
from ragloom_app.ui.render import chat_history
from tests.helpers.markdown_shown import markdown_html, shown_text

HOST = "http://203.0.113.7"

# Each form a model (or a planted document) could use to make a browser fetch a URL.
HOSTILE = {
    "markdown image": f"![chart]({HOST}/a.png)",
    "image with title": f'![chart]({HOST}/a.png "t")',
    "reference image": f"![chart][r]\n\n[r]: {HOST}/b.png",
    "shortcut reference image": f"[r]: {HOST}/c.png\n\n![r]",
    "autolink inside an image": f"![<{HOST}/d>]({HOST}/e.png)",
    "image inside a link": f"[![x]({HOST}/f.png)](https://example.org)",
    "img": f'<img src="{HOST}/g.png">',
    "img without quotes": f"<img src={HOST}/h.png>",
    "picture": f'<picture><source srcset="{HOST}/i.png"><img src="x"></picture>',
    "video poster": f'<video poster="{HOST}/j.png"></video>',
    "audio": f'<audio src="{HOST}/k.mp3" autoplay></audio>',
    "svg image": f'<svg><image href="{HOST}/l.png"/></svg>',
    "iframe": f'<iframe src="{HOST}/m"></iframe>',
    "object": f'<object data="{HOST}/n"></object>',
    "embed": f'<embed src="{HOST}/o">',
    "link": f'<link rel="stylesheet" href="{HOST}/p.css">',
    "meta refresh": f'<meta http-equiv="refresh" content="0;url={HOST}/q">',
    "style url": f'<div style="background:url({HOST}/r.png)">x</div>',
    "input image": f'<input type="image" src="{HOST}/s.png">',
    "html block": f"<div>\n<img src={HOST}/t.png>\n</div>",
    "entity-encoded img": f"&lt;img src={HOST}/u.png&gt;",
    "data image": "![x](data:image/png;base64,iVBORw0KGgo=)",
}

# Elements and attributes that load something without a click.
_LOADING_TAGS = {
    "img", "picture", "source", "video", "audio", "svg", "image", "iframe", "object",
    "embed", "link", "meta", "input", "script", "style", "track", "frame", "base",
}  # fmt: skip
_LOADING_ATTRS = {"src", "srcset", "poster", "data", "background", "style", "xlink:href"}


class _Tags(HTMLParser):
    """Every start tag and its attributes, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(markup: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    return parser.tags


def _assert_loads_nothing(markup: str) -> None:
    for tag, attrs in _tags(markup):
        assert tag not in _LOADING_TAGS, markup
        assert not _LOADING_ATTRS & set(attrs), markup
        if tag == "a":
            assert re.match(r"(https?:|mailto:|#)", attrs.get("href") or "#"), markup


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_no_form_of_embedding_survives(text: str) -> None:
    _assert_loads_nothing(model_html(text))


def test_images_become_links_that_say_so() -> None:
    shown = model_html(f"See ![the chart]({HOST}/a.png).")
    assert shown == (
        f'<p>See <a href="{HOST}/a.png" class="rl-image-link" target="_blank" '
        'rel="noopener noreferrer nofollow">image: the chart</a>.</p>'
    )
    # Inside a link, the image is its text: a link may not hold another.
    assert model_html(f"[![x]({HOST}/f.png)](https://example.org)") == (
        '<p><a href="https://example.org" target="_blank" rel="noopener noreferrer nofollow">'
        "image: x</a></p>"
    )


def test_raw_html_shows_as_text() -> None:
    assert model_html('<img src="x">') == "<p>&lt;img src=&quot;x&quot;&gt;</p>"


def test_markdown_still_renders() -> None:
    shown = model_html(
        "It runs **hot** [1].\nSee [the docs](https://example.org).\n\n"
        "- one\n- two\n\n```python\nif x < 5:\n    pass\n```\n\n`<b>` is code"
    )
    assert "<strong>hot</strong> [1].<br />" in shown
    assert '<a href="https://example.org" target="_blank"' in shown
    assert "<ul>\n<li>one</li>" in shown
    assert '<pre><code class="language-python">if x &lt; 5:' in shown
    assert "<code>&lt;b&gt;</code> is code" in shown
    assert "<table>" in model_html("| a | b |\n|---|---|\n| 1 | 2 |")


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "file:///etc/x"])
def test_links_with_other_schemes_stay_text(url: str) -> None:
    assert model_html(f"[x]({url})") == f"<p>[x]({url})</p>"


def test_stored_messages_render_the_same_way() -> None:
    history = chat_history(
        [
            StoredMessage("user", f"Show ![me]({HOST}/u.png)"),
            StoredMessage("assistant", f"<img src={HOST}/v.png> **ok**"),
            StoredMessage("system", "not shown"),
        ]
    )
    assert [m["role"] for m in history] == ["user", "assistant"]
    for message in history:
        _assert_loads_nothing(message["content"])
    assert "<strong>ok</strong>" in history[1]["content"]


def test_plain_html_escapes_everything() -> None:
    assert plain_html("<b>Searching…</b>", emphasis=True) == (
        "<p><em>&lt;b&gt;Searching…&lt;/b&gt;</em></p>"
    )


_PIECES = st.sampled_from(
    ["![", "](", ")", "[", "]", "<", ">", "img", "src=", HOST, "/x.png", "\n", "\n\n", " ",
     "`", "```", "<", "!", ":", '"', "=", "[r]: ", "&lt;", "<svg><image href=", "    ", "a"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_any_mix_of_markdown_and_html_loads_nothing(text: str) -> None:
    _assert_loads_nothing(model_html(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.sampled_from(["www.e.x", "a@b.c", "$$", "*", "_", "#", "\\"])))
def test_literal_markdown_shows_any_name_as_written(pieces: list[str]) -> None:
    """What a status line (gr.Markdown) shows of a name: the name, in one paragraph."""
    name = " ".join("".join(pieces).split())  # a name has no line breaks nor runs of spaces
    markdown = literal_markdown(name)
    assert shown_text(markdown) == name
    assert re.findall(r"<(\w+)", markdown_html(markdown)) == (["p"] if name else [])
    # Nor an autolink for the browser's GFM parser: www., a scheme, an e-mail address.
    assert not re.search(r"www\.|:|@", markdown)
