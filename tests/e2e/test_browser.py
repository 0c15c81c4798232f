"""The web UI, driven in chromium as a user drives it: upload, index, ask, reload.

Set RAGLOOM_SCREENSHOTS=/some/dir to keep a screenshot of each step (for looking at the UI).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, expect

if TYPE_CHECKING:
    from conftest import LiveUI

pytestmark = [pytest.mark.browser, pytest.mark.llm]

QUESTION = "At what temperature does the Zorblax reactor run?"
REACTOR = """# The Zorblax reactor

The Zorblax reactor runs at 451 kelvin. It was commissioned in 2019 in Lund and has run
without a major outage since.

## Maintenance

The cooling loop is flushed every 90 days by the night shift. Spare pumps are kept in
hall C.

## Staff

Twelve engineers run the plant in three shifts of four.
"""
# The local model on 2 busy cores: loading, indexing and answering take seconds to a minute.
INDEX_TIMEOUT = 180_000
ANSWER_TIMEOUT = 240_000
UI_TIMEOUT = 20_000

# Records the text of the last bot message at every change of the chat, to see the stream.
WATCH_ANSWER = """() => {
  window.__botTexts = [];
  const chat = document.querySelector('#chatbot');
  new MutationObserver(() => {
    const bots = chat.querySelectorAll('[data-testid=bot]');
    if (bots.length) window.__botTexts.push(bots[bots.length - 1].innerText);
  }).observe(chat, {subtree: true, childList: true, characterData: true});
}"""


def _snap(page: Page, name: str) -> None:
    folder = os.environ.get("RAGLOOM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def _uploads(folder: Path) -> list[Path]:
    """One good document and three files that must fail, each for its own reason."""
    files = {
        "zorblax.md": REACTOR.encode(),
        "empty.txt": b"",
        "blob.txt": bytes(range(256)) * 16,
        "notes.xyz": b"not a supported type",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return [folder / name for name in files]


def _record_outside_requests(page: Page, live_ui: LiveUI) -> list[str]:
    """Every request the page makes to anything but the app's own server."""
    own = urlsplit(live_ui.url).netloc
    outside: list[str] = []

    def check(request: Request) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != own:
            outside.append(request.url)

    page.on("request", check)
    return outside


def test_page_shows_the_controls(page: Page, live_ui: LiveUI) -> None:
    page.goto(live_ui.url)
    expect(page.get_by_role("tab", name="Chat")).to_be_visible(timeout=UI_TIMEOUT)
    expect(page.locator("#mode-selector input[role=combobox]")).to_have_value("FullQA")
    expect(page.locator("#evidence")).to_contain_text("passages an answer cites")
    page.get_by_role("tab", name="Files").click()
    expect(page.locator("#index-selector input[role=combobox]")).to_have_value("My files")
    expect(page.locator("#file-list")).to_contain_text("No files in 'My files' yet")


def test_upload_index_ask_and_reload(page: Page, live_ui: LiveUI, tmp_path: Path) -> None:
    outside = _record_outside_requests(page, live_ui)
    page.goto(live_ui.url)

    # Files: one upload of four files; each gets its own outcome under its own name.
    page.get_by_role("tab", name="Files").click()
    files = _uploads(tmp_path)
    page.locator("#upload input[type=file]").set_input_files([str(f) for f in files])
    # Uploaded files are listed by gradio once on the server (the name split into spans).
    for file in files:
        listed = page.locator("#upload").get_by_role("cell", name=file.name, exact=True)
        expect(listed).to_be_visible(timeout=UI_TIMEOUT)
    page.locator("#index-button").click()
    results = page.locator("#index-results")
    expect(results).to_contain_text("1 indexed, 3 failed", timeout=INDEX_TIMEOUT)
    _snap(page, "1-indexed")
    expected = {
        "zorblax.md": "indexed",
        "empty.txt": "the file is empty",
        "blob.txt": "binary content",
        "notes.xyz": "unsupported file type '.xyz'",
    }
    for name, text in expected.items():
        row = results.locator("tr", has_text=name)
        expect(row).to_contain_text(text)
        if name != "zorblax.md":
            expect(row).to_contain_text("failed")
    # The temporary upload paths never show, only the users' file names.
    expect(results).not_to_contain_text("/tmp")
    file_list = page.locator("#file-list")
    expect(file_list.locator("tr", has_text="zorblax.md")).to_contain_text("indexed")
    expect(file_list.locator("tr", has_text="blob.txt")).to_contain_text("binary content")

    # Chat: the answer streams in, then its evidence shows the cited chunk.
    page.get_by_role("tab", name="Chat").click()
    page.evaluate(WATCH_ANSWER)
    page.locator("#question textarea").fill(QUESTION)
    page.locator("#send").click()
    bot = page.locator("#chatbot [data-testid=bot]").last
    expect(bot).to_contain_text("451", timeout=ANSWER_TIMEOUT)
    expect(page.locator("#send")).to_be_enabled(timeout=ANSWER_TIMEOUT)
    final = bot.inner_text()
    seen = page.evaluate("window.__botTexts")
    # Status lines ("Searching the documents…") end with an ellipsis; partial answers do not.
    partial = {t for t in seen if t.strip() and t != final and not t.strip().endswith("…")}
    assert partial, f"the answer did not stream: saw only {sorted(set(seen))!r}"
    evidence = page.locator("#evidence")
    expect(evidence).to_contain_text("451 kelvin")
    expect(evidence).to_contain_text(re.compile(r"\[\d+\] zorblax\.md"))
    page.get_by_text("Steps and usage").click()
    expect(page.locator("#usage")).to_contain_text(re.compile(r"\d+ LLM calls?, [\d,]+ tokens"))
    _snap(page, "2-answered")

    # A reload reopens the conversation from the database, with its evidence.
    page.reload()
    expect(page.locator("#chatbot [data-testid=user]").first).to_contain_text(
        "Zorblax reactor", timeout=UI_TIMEOUT
    )
    expect(page.locator("#chatbot [data-testid=bot]").last).to_contain_text("451")
    expect(page.locator("#evidence")).to_contain_text("451 kelvin")
    conversation = page.locator("#conversation-list").get_by_role("radio", name=QUESTION)
    expect(conversation).to_be_checked()
    _snap(page, "3-reloaded")

    # A new conversation starts empty; picking the old one from the list brings it back.
    page.locator("#new-conversation").click()
    expect(page.locator("#chatbot [data-testid=bot]")).to_have_count(0, timeout=UI_TIMEOUT)
    expect(page.locator("#evidence")).not_to_contain_text("451 kelvin")
    conversation.check()
    expect(page.locator("#chatbot [data-testid=bot]").last).to_contain_text(
        "451", timeout=UI_TIMEOUT
    )
    expect(page.locator("#evidence")).to_contain_text("451 kelvin")

    assert outside == [], f"the page reached outside the app: {outside}"
