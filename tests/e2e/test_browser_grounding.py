"""In a real browser, an answer's supported and unsupported sentences look different.

The UI over a scripted LLM (``ReplayLLM``) and hashed embeddings, served in-process;
Debian's chromium through Playwright. FullQA answers with one sentence its passage holds
and one it does not: once the answer is complete, the first is marked found, the second
not found with a visible mark whose title names the missing number, and the steps panel
gives the verdict. A screenshot goes outside the repository (``SCREENSHOT_DIR``, default
the system's temporary folder): ``ragloom-grounding.png``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ragloom.llms.replay import ReplayLLM
from tests.e2e.conftest import (  # noqa: F401 - the fixture is used by pytest-playwright
    LiveUI,
    browser_type_launch_args,
    scripted_ui,
)

pytestmark = pytest.mark.browser

UI_TIMEOUT = 30_000
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR", tempfile.gettempdir()))
ANSWER = "The reactor runs at 451 kelvin [1]. It was commissioned in 1962 [1]."


@pytest.fixture(scope="module")
def live_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveUI]:
    """The UI over a scripted LLM and one indexed note."""
    note = {"reactor.md": "The Zorblax reactor runs at 451 kelvin. It was commissioned in 2019.\n"}
    with scripted_ui(tmp_path_factory.mktemp("grounding-ui"), note) as live:
        yield live


def _underline(locator: object) -> str:
    return locator.evaluate("e => getComputedStyle(e).textDecorationColor")  # type: ignore[attr-defined]


def test_supported_and_unsupported_sentences_render_distinctly(page: Page, live_ui: LiveUI) -> None:
    llm = live_ui.app.llm()
    assert isinstance(llm, ReplayLLM)
    llm.replies[:] = [ANSWER]
    page.goto(live_ui.url)
    expect(page.get_by_role("tab", name="Chat")).to_be_visible(timeout=UI_TIMEOUT)
    page.locator("#question textarea").fill("How hot is the reactor, and how old?")
    page.locator("#send").click()

    answer = page.locator("#chatbot [data-testid=bot]").last
    supported = answer.locator("span.rl-claim.rl-supported")
    unsupported = answer.locator("span.rl-claim.rl-unsupported")
    expect(unsupported.first).to_be_visible(timeout=UI_TIMEOUT)
    expect(supported.first).to_be_visible()
    assert "451 kelvin" in " ".join(supported.all_inner_texts())
    assert "1962" in " ".join(unsupported.all_inner_texts())
    assert "451" not in " ".join(unsupported.all_inner_texts())
    assert unsupported.first.get_attribute("title") == "Not in the passages it cites: 1962"
    assert supported.first.get_attribute("title") == "Found in [1]"
    mark = answer.locator("sup.rl-mark")
    expect(mark).to_have_count(1)
    expect(mark).to_have_text("not in its sources")
    expect(mark).to_be_visible()
    # Distinct to the eye: the stylesheet underlines them in different colours.
    assert _underline(supported.first) != _underline(unsupported.first)

    page.locator("#usage-accordion").get_by_text("Steps and usage").click()
    expect(page.locator("#usage .rl-grounding")).to_contain_text(
        "some claims are not in the passages they cite", timeout=UI_TIMEOUT
    )
    page.screenshot(path=str(SCREENSHOT_DIR / "ragloom-grounding.png"), full_page=True)


def test_auto_shows_which_mode_answered_and_why_it_tried_again(page: Page, live_ui: LiveUI) -> None:
    llm = live_ui.app.llm()
    assert isinstance(llm, ReplayLLM)
    plan = "#Plan1: Find the temperature.\n#E1 = docsearch[Zorblax reactor temperature]\n"
    llm.replies[:] = ["It runs at 900 kelvin [1].", plan, "It runs at 451 kelvin [1]."]
    page.goto(live_ui.url)
    page.locator("#mode-selector input[role=combobox]").click(timeout=UI_TIMEOUT)
    page.get_by_role("option", name="Auto", exact=True).click()
    page.locator("#question textarea").fill("How hot is the reactor?")
    page.locator("#send").click()

    answer = page.locator("#chatbot [data-testid=bot]").last
    expect(answer).to_contain_text("451 kelvin", timeout=UI_TIMEOUT)
    expect(answer).not_to_contain_text("900")
    expect(answer.locator("span.rl-claim.rl-supported").first).to_be_visible()
    page.locator("#usage-accordion").get_by_text("Steps and usage").click()
    steps = page.locator("#usage .rl-steps")
    expect(steps).to_contain_text("route fullqa: single: no cue of another kind")
    expect(steps).to_contain_text("escalate rewoo: fullqa did not pass")
    page.screenshot(path=str(SCREENSHOT_DIR / "ragloom-auto.png"), full_page=True)
