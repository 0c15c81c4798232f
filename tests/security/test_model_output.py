"""Model output is untrusted: shown in a real browser, it loads nothing from another host.

A scripted LLM answers with every way Markdown or HTML can embed a remote resource
(images, reference images, ``<img>``, ``<picture>``, ``<video poster>``, ``<svg><image>``,
``<iframe>``, ``<meta refresh>``, ``style=url()``, ...), all pointing at 203.0.113.0/24
(TEST-NET-3, never routed); the evidence holds a chunk with the same, and a ReWOO plan
puts them in its tool inputs, its tool names and the step errors of the usage panel.
Chromium (Debian's, through Playwright) shows the answers, the evidence and the steps;
every request to a host that is not loopback is recorded and aborted: there must be none.
The proof is the rendering alone (no Content-Security-Policy is relied upon).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from ipaddress import ip_address
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

from ragloom.llms.replay import ReplayLLM
from tests.e2e.conftest import (  # noqa: F401 - the fixture is used by pytest-playwright
    LiveUI,
    browser_type_launch_args,
    free_port,
)

pytestmark = [pytest.mark.browser, pytest.mark.security]

HOST = "http://203.0.113.7"
HOSTILE_MARKDOWN = f"""The reactor runs at 451 kelvin [1].

![chart]({HOST}/markdown.png) and ![ref][r] and ![r2] and ![<{HOST}/auto>]({HOST}/alt.png)
[![inner]({HOST}/inner.png)](https://example.org/page)

<img src="{HOST}/img.png"> <img src={HOST}/bare.png>
<picture><source srcset="{HOST}/srcset.png"><img src="{HOST}/fallback.png"></picture>
<video poster="{HOST}/poster.png" src="{HOST}/video.mp4" autoplay></video>
<audio src="{HOST}/audio.mp3" autoplay></audio>
<svg><image href="{HOST}/svg.png"/></svg>
<iframe src="{HOST}/frame.html"></iframe> <object data="{HOST}/object"></object>
<embed src="{HOST}/embed"> <link rel="stylesheet" href="{HOST}/style.css">
<meta http-equiv="refresh" content="0;url={HOST}/refresh">
<div style="background:url({HOST}/style.png)">styled</div>
<input type="image" src="{HOST}/input.png">
<table background="{HOST}/table.png"><tr><td>cell</td></tr></table>

$$\\includegraphics{{{HOST}/katex.png}}$$

[r]: {HOST}/reference.png
[r2]: {HOST}/shortcut.png
"""
EVIDENCE = f"""# Reactor notes

The reactor runs at 451 kelvin. <img src="{HOST}/evidence.png"> ![e]({HOST}/evidence-md.png)
<iframe src="{HOST}/evidence-frame"></iframe>
"""
REWOO_PLAN = (
    "#Plan1: Search the notes.\n"
    f"#E1 = docsearch[reactor ![plan]({HOST}/plan.png) <img src={HOST}/plan-img.png>]\n"
)
# A JSON plan may name any tool: the name reaches the plan's error in the usage panel.
BAD_TOOL_PLAN = json.dumps(
    {"steps": [{"plan": "x", "tool": f'<img src="{HOST}/tool.png">', "input": "reactor"}]}
)
LOADING = "img, picture, source, video, audio, iframe, object, embed, image, input[type=image]"
UI_TIMEOUT = 30_000


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(scope="module")
def live_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveUI]:
    """The UI over a scripted LLM and hashed embeddings, one indexed hostile document."""
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings
    from ragloom_app.ui.server import serve

    settings = AppSettings(data_dir=tmp_path_factory.mktemp("data"), first_run_docs=None)
    settings.llms = {"scripted": {"class": "ragloom_app.testing.ReplayLLM"}}
    settings.default_llm = "scripted"
    settings.embeddings = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
    settings.default_embedding = "hash"
    app = BaseApp(settings).start()
    notes = tmp_path_factory.mktemp("docs") / "notes.md"
    notes.write_text(EVIDENCE, encoding="utf-8")
    (outcome,) = app.indices.get("My files").get_indexing_pipeline({}).run([notes])
    assert outcome.status == "indexed", outcome
    port = free_port()
    demo = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield LiveUI(url=f"http://127.0.0.1:{port}/", app=app, demo=demo)
    finally:
        demo.close()


def _outside_requests(page: Page) -> list[str]:
    """Every request the page makes to a host that is not loopback (each is aborted)."""
    outside: list[str] = []

    def record(url: str) -> None:
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and not _is_loopback(url):
            outside.append(url)

    def route(route: Route) -> None:
        if _is_loopback(route.request.url):
            route.continue_()
        else:
            route.abort()

    page.on("request", lambda request: record(request.url))
    page.route("**/*", route)
    return outside


def _ask(page: Page, question: str) -> None:
    """Ask, and wait for the whole answer (a scripted one may come too fast to see the
    send button disabled: the new message comes with the disabling, in one update)."""
    bots = page.locator("#chatbot [data-testid=bot]")
    before = bots.count()
    page.locator("#question textarea").fill(question)
    page.locator("#send").click()
    expect(bots).to_have_count(before + 1, timeout=UI_TIMEOUT)
    expect(page.locator("#send")).to_be_enabled(timeout=UI_TIMEOUT)


def _pick_mode(page: Page, name: str) -> None:
    page.locator("#mode-selector input[role=combobox]").click()
    page.get_by_role("option", name=name, exact=True).click()


def test_hostile_answers_plans_and_evidence_load_nothing(page: Page, live_ui: LiveUI) -> None:
    llm = live_ui.app.llm()
    assert isinstance(llm, ReplayLLM)
    outside = _outside_requests(page)
    page.goto(live_ui.url)
    expect(page.get_by_role("tab", name="Chat")).to_be_visible(timeout=UI_TIMEOUT)

    # FullQA: the streamed answer (as streamed, then as revised with its citations, which
    # breaks the reference definitions: both were shown) and its evidence.
    llm.replies[:] = [HOSTILE_MARKDOWN]
    _ask(page, "How hot does the reactor run?")
    bot = page.locator("#chatbot [data-testid=bot]").last
    expect(bot).to_contain_text("451 kelvin")
    expect(bot).to_contain_text('<img src="http://203.0.113.7/img.png">')  # shown as text
    expect(bot.get_by_role("link", name="image: chart")).to_have_attribute(
        "href", f"{HOST}/markdown.png"
    )
    evidence = page.locator("#evidence")
    expect(evidence).to_contain_text(f'<img src="{HOST}/evidence.png">')

    # ReWOO: a plan whose tool input is hostile, then one whose tool name is.
    _pick_mode(page, "ReWOO agent")
    llm.replies[:] = [REWOO_PLAN, HOSTILE_MARKDOWN]
    _ask(page, "What do the notes say about the reactor?")
    page.locator("#usage-accordion").get_by_text("Steps and usage").click()
    usage = page.locator("#usage")
    expect(usage).to_contain_text(f"docsearch[reactor ![plan]({HOST}/plan.png)")
    llm.replies[:] = [BAD_TOOL_PLAN]
    _ask(page, "And now?")
    # Step errors are scrubbed of URLs too (a tool's error may name an endpoint).
    expect(usage).to_contain_text("unknown tool '<img src=\"[address hidden]\">'")

    page.wait_for_timeout(1500)  # time for anything that would load to ask for it
    for panel in ("#chatbot", "#usage", "#evidence"):
        expect(page.locator(panel).locator(LOADING)).to_have_count(0)
    assert outside == [], f"the page reached other hosts: {outside}"
    # The page went on working: every question was answered and the inputs came back.
    expect(page.locator("#chatbot [data-testid=bot]")).to_have_count(3)
    expect(page.locator("#question textarea")).to_be_editable()


def test_stored_hostile_answers_load_nothing_when_reopened(page: Page, live_ui: LiveUI) -> None:
    outside = _outside_requests(page)
    page.goto(live_ui.url)  # reopens the latest conversation, from the database
    expect(page.locator("#chatbot [data-testid=bot]").first).to_contain_text(
        "451 kelvin", timeout=UI_TIMEOUT
    )
    page.wait_for_timeout(1500)
    expect(page.locator("#chatbot").locator(LOADING)).to_have_count(0)
    assert outside == [], f"the page reached other hosts: {outside}"


def test_the_neutraliser_is_what_stops_them(page: Page) -> None:
    """The same hostile Markdown, rendered as gradio would have (its own Markdown and
    sanitizer), does reach out: the count above is zero because of the rendering."""
    import gradio as gr

    from ragloom_app.ui.layout import launch_styling

    with gr.Blocks() as demo:
        gr.Chatbot([{"role": "assistant", "content": HOSTILE_MARKDOWN}], elem_id="raw")
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True, **launch_styling())
    try:
        outside = _outside_requests(page)
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.locator("#raw")).to_contain_text("451 kelvin", timeout=UI_TIMEOUT)
        page.wait_for_timeout(1500)
        # Measured: 13 URLs (images, reference images, srcset, poster, svg, style, input...).
        assert {f"{HOST}/markdown.png", f"{HOST}/img.png", f"{HOST}/style.png"} <= set(outside)
    finally:
        demo.close()
