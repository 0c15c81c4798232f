"""Several indices in the web UI, driven in chromium: create one, fill it, search only its
file (by full text, a search setting), see the quoted span marked in the evidence, then
delete the index after confirming.

Set RAGLOOM_SCREENSHOTS=/some/dir to keep a screenshot of each step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Locator, Page, expect

if TYPE_CHECKING:
    from conftest import LiveUI

pytestmark = [pytest.mark.browser, pytest.mark.llm]

QUESTION = "At what temperature does the Zorblax reactor run?"
# In the new index: the answer.
CURRENT = """# The Zorblax reactor

The Zorblax reactor runs at 451 kelvin. It was commissioned in 2019 in Lund.
"""
# In "My files": on the same subject, so only the file filter keeps it out of the answer.
LEGACY = """# The old Zorblax reactor

Before 2019 the old Zorblax reactor ran at 300 kelvin in Malmo.
"""
INDEX = "Team notes"
INDEX_TIMEOUT = 180_000
ANSWER_TIMEOUT = 240_000
UI_TIMEOUT = 20_000


def _snap(page: Page, name: str) -> None:
    folder = os.environ.get("RAGLOOM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"indices-{name}.png"), full_page=True)


def _pick(page: Page, elem_id: str, option: str) -> None:
    """Choose ``option`` in the gradio dropdown ``#elem_id``."""
    page.locator(f"#{elem_id} input[role=combobox]").click()
    page.get_by_role("option", name=option, exact=True).click()


def _type_number(field: Locator, value: str) -> None:
    """Type ``value`` into a number field and leave it (Tab) as a user does, until the field
    keeps it. About one run in six the field showed its default again just after being
    filled (the cause is not known yet, noted in docs/reliability.md); a user sees that and
    types again, and so does this test, at most three times."""
    for _ in range(3):
        field.fill(value)
        field.press("Tab")
        try:
            expect(field).to_have_value(value, timeout=2_000)
            return
        except AssertionError:
            continue
    expect(field).to_have_value(value)


def _index_file(page: Page, index: str, file: Path) -> None:
    _pick(page, "index-selector", index)
    page.locator("#upload input[type=file]").set_input_files(str(file))
    listed = page.locator("#upload").get_by_role("cell", name=file.name, exact=True)
    expect(listed).to_be_visible(timeout=UI_TIMEOUT)
    page.locator("#index-button").click()
    expect(page.locator("#index-results")).to_contain_text("1 indexed", timeout=INDEX_TIMEOUT)
    expect(page.locator("#file-list")).to_contain_text(file.name)


def test_a_second_index_searched_alone_then_deleted(
    page: Page, live_ui: LiveUI, tmp_path: Path
) -> None:
    (tmp_path / "zorblax.md").write_text(CURRENT, encoding="utf-8")
    (tmp_path / "legacy.md").write_text(LEGACY, encoding="utf-8")
    page.goto(live_ui.url)
    page.get_by_role("tab", name="Files").click()
    _index_file(page, "My files", tmp_path / "legacy.md")

    # Create the index from the "Manage indices" section, with its own settings.
    page.locator("#manage-indices").get_by_text("Manage indices").click()
    page.locator("#new-index-name").get_by_role("textbox").fill(INDEX)
    _type_number(page.locator("#new-index-fileindex-chunk_size input[type=number]"), "120")
    _pick(page, "new-index-fileindex-visibility", "shared")
    page.locator("#create-index").click()
    status = page.locator("#index-admin-status")
    expect(status).to_contain_text(f"Created the index '{INDEX}'.", timeout=UI_TIMEOUT)
    row = page.locator("#index-table tr", has_text=INDEX)
    expect(row).to_contain_text("shared")
    expect(row).to_contain_text("120")
    # The new index is the Files tab's selected one, ready for an upload.
    expect(page.locator("#index-selector input[role=combobox]")).to_have_value(INDEX)
    _index_file(page, INDEX, tmp_path / "zorblax.md")
    expect(row).to_contain_text("1 file")
    _snap(page, "1-created")

    # Chat: search only the new index's file, by full text alone (a search setting).
    page.get_by_role("tab", name="Chat").click()
    _pick(page, "file-filter", f"{INDEX} / zorblax.md")
    page.keyboard.press("Escape")
    page.locator("#search-settings").get_by_text("Search settings").click()
    _pick(page, "index-setting-team-notes-retrieval_mode", "Full-text")
    page.locator("#question textarea").fill(QUESTION)
    page.locator("#send").click()
    bot = page.locator("#chatbot [data-testid=bot]").last
    expect(bot).to_contain_text("451", timeout=ANSWER_TIMEOUT)
    # The evidence arrives with the end of the answer, when the inputs unlock.
    expect(page.locator("#send")).to_be_enabled(timeout=ANSWER_TIMEOUT)
    evidence = page.locator("#evidence")
    expect(evidence).to_contain_text("zorblax.md")
    expect(evidence).not_to_contain_text("legacy.md")
    expect(evidence).to_contain_text("found by full-text")
    expect(evidence).not_to_contain_text("vector")
    marked = evidence.locator("mark").first
    expect(marked).to_be_visible()
    expect(marked).to_contain_text("451 kelvin")
    _snap(page, "2-answered")

    # Delete the index: it asks first, then every selector forgets it.
    page.get_by_role("tab", name="Files").click()
    _pick(page, "delete-index-selector", INDEX)
    page.locator("#delete-index").click()
    expect(page.locator("#delete-index-question")).to_contain_text(
        f"Delete the index {INDEX} and its 1 file", timeout=UI_TIMEOUT
    )
    _snap(page, "3-confirm")
    # Choosing another index withdraws the question: "Yes" deletes only what it named.
    _pick(page, "delete-index-selector", "My files")
    expect(page.locator("#delete-index-question")).to_be_hidden(timeout=UI_TIMEOUT)
    _pick(page, "delete-index-selector", INDEX)
    page.locator("#delete-index").click()
    expect(page.locator("#delete-index-question")).to_contain_text(
        f"Delete the index {INDEX} and its 1 file", timeout=UI_TIMEOUT
    )
    page.locator("#delete-index-confirm").click()
    expect(status).to_contain_text(f"Deleted the index '{INDEX}'.", timeout=UI_TIMEOUT)
    expect(page.locator("#index-table")).not_to_contain_text(INDEX)
    expect(page.locator("#delete-index-question")).to_be_hidden()
    expect(page.locator("#index-selector input[role=combobox]")).to_have_value("My files")
    page.get_by_role("tab", name="Chat").click()
    page.locator("#file-filter input[role=combobox]").click()
    expect(page.get_by_role("option", name="My files / legacy.md")).to_be_visible()
    expect(page.get_by_role("option", name=f"{INDEX} / zorblax.md")).to_have_count(0)
    assert [index.name for index in live_ui.app.indices.indices] == ["My files"]
