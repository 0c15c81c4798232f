"""A plugin mode's plan and steps show in a real browser exactly as a built-in mode's do.

The UI over a scripted LLM (``ReplayLLM``) and hashed embeddings, served in-process;
Debian's chromium through Playwright. ReWOO (built in) and the tests' Checklist mode
(:mod:`tests.helpers.checklist_mode`, registered as a plugin's mode would be) each answer
once; the steps panel of each is reduced to its structure (tags and classes, no text) and
the two must be the same. The plugin's step shows its own label while it runs. Screenshots
go outside the repository (``SCREENSHOT_DIR``, default the system's temporary folder).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ragloom.llms.replay import ReplayLLM
from ragloom_app.app import BaseApp
from tests.e2e.conftest import (  # noqa: F401 - the fixture is used by pytest-playwright
    LiveUI,
    browser_type_launch_args,
    scripted_ui,
)
from tests.helpers.checklist_mode import GATES, SEARCH_LABEL, ChecklistReasoning

pytestmark = pytest.mark.browser

UI_TIMEOUT = 30_000
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR", tempfile.gettempdir()))
REWOO_PLAN = (
    "#Plan1: Find the temperature.\n#E1 = docsearch[reactor temperature]\n"
    "#Plan2: Convert it.\n#E2 = calculator[451 - 273.15]\n"
)
ANSWER = "The reactor runs at 451 kelvin [1]."
# The structure of an element: its tag, its classes and its children's, without text.
OUTLINE = """element => {
    const outline = node => node.tagName.toLowerCase()
        + [...node.classList].sort().map(c => "." + c).join("")
        + (node.children.length ? "(" + [...node.children].map(outline).join(" ") + ")" : "");
    return outline(element);
}"""


@pytest.fixture(scope="module")
def live_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveUI]:
    """The UI over a scripted LLM, one indexed note, and the Checklist mode registered."""
    note = {"reactor.md": "The Zorblax reactor runs at 451 kelvin.\n"}

    def register(app: BaseApp) -> None:
        app.register_reasoning(ChecklistReasoning, owner="ragloom-checklist (tests)")

    with scripted_ui(tmp_path_factory.mktemp("plugin-mode"), note, register) as live:
        try:
            yield live
        finally:
            GATES.clear()


def _pick_mode(page: Page, name: str) -> None:
    page.locator("#mode-selector input[role=combobox]").click()
    page.get_by_role("option", name=name, exact=True).click()


def _send(page: Page, question: str) -> None:
    page.locator("#question textarea").fill(question)
    page.locator("#send").click()


def _answered(page: Page, count: int) -> None:
    expect(page.locator("#chatbot [data-testid=bot]")).to_have_count(count, timeout=UI_TIMEOUT)
    expect(page.locator("#chatbot [data-testid=bot]").last).to_contain_text(
        "451 kelvin", timeout=UI_TIMEOUT
    )
    expect(page.locator("#send")).to_be_enabled(timeout=UI_TIMEOUT)


def _steps_panel(page: Page, shot: str) -> tuple[str, set[str], list[str], str]:
    """The steps panel: its plan's structure, the structures of its timed steps, the plan's
    lines and the panel's text; a screenshot of the page."""
    usage = page.locator("#usage")
    expect(usage.locator("ul.rl-steps")).to_be_visible(timeout=UI_TIMEOUT)
    items = usage.locator("ul.rl-steps > li")
    plan = items.filter(has=page.locator("strong", has_text="Plan"))
    expect(plan).to_have_count(1)
    timed = {items.nth(n).evaluate(OUTLINE) for n in range(items.count())} - {
        plan.evaluate(OUTLINE)
    }
    lines = plan.locator("ul > li").all_inner_texts()
    page.screenshot(path=str(SCREENSHOT_DIR / shot), full_page=True)
    return plan.evaluate(OUTLINE), timed, lines, usage.inner_text()


def test_a_plugin_modes_plan_and_steps_render_as_a_built_in_modes(
    page: Page, live_ui: LiveUI
) -> None:
    llm = live_ui.app.llm()
    assert isinstance(llm, ReplayLLM)
    page.goto(live_ui.url)
    expect(page.get_by_role("tab", name="Chat")).to_be_visible(timeout=UI_TIMEOUT)
    page.locator("#usage-accordion").get_by_text("Steps and usage").click()

    # Built in: ReWOO plans two tool calls, runs them and answers.
    _pick_mode(page, "ReWOO agent")
    llm.replies[:] = [REWOO_PLAN, ANSWER]
    _send(page, "How hot is the reactor?")
    _answered(page, 1)
    rewoo, rewoo_steps, rewoo_lines, rewoo_text = _steps_panel(page, "ragloom-rewoo-plan.png")
    assert rewoo_lines == ["E1 docsearch[reactor temperature]", "E2 calculator[451 - 273.15]"]

    # The plugin's mode: held in its first step, the chat shows the label the mode chose.
    _pick_mode(page, "Checklist (plugin)")
    gate = GATES["checklist"] = threading.Event()
    llm.replies[:] = [ANSWER]
    _send(page, "And how hot is it now?")
    status = page.locator("#chatbot [data-testid=bot]").last
    expect(status).to_have_text(f"{SEARCH_LABEL}…", timeout=UI_TIMEOUT)
    assert status.locator("em").count() == 1  # a status line, as a built-in step's is
    page.screenshot(path=str(SCREENSHOT_DIR / "ragloom-plugin-step.png"), full_page=True)
    gate.set()
    _answered(page, 2)
    plugin, plugin_steps, plugin_lines, plugin_text = _steps_panel(page, "ragloom-plugin-plan.png")

    assert plugin_lines == [
        "C1 Look the question up in the files",
        "C2 Answer citing what was found",
    ]
    # The same structure, element for element: the plan, and each timed step.
    assert plugin == rewoo == "li(strong ul(li(code) li(code)))", (plugin, rewoo)
    assert plugin_steps == rewoo_steps == {"li(code)"}
    assert "C1 " in plugin_text and "mode checklist" in plugin_text
    assert "mode rewoo" in rewoo_text
