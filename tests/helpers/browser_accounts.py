"""What the browser tests of accounts share: the accounts and their files, a live UI with
login on, screenshots, and the steps a person takes (log in, make an index, upload, ask)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Page, expect

from ragloom.llms.replay import ReplayLLM
from tests.e2e.conftest import LiveUI
from tests.helpers.ports import free_port

UI_TIMEOUT = 30_000
ANSWER_TIMEOUT = 60_000
PASSWORDS = {"admin": "admin-password-1", "alice": "alice-password-1", "bob": "bob-password-1"}

# alice's two files, and the admin's shared one.
ALICE_FILES = {
    "zorblax.md": "# The Zorblax reactor\n\nThe Zorblax reactor runs at 451 kelvin. "
    "It was commissioned in 2019 in Lund.\n",
    "orchard.md": "# The Quillon orchard\n\nThe Quillon orchard grows 37 pear trees "
    "near Uppsala.\n",
}
SHARED_FILE = (
    "handbook.md",
    "# The office handbook\n\nThe Frobnitz office opens at 8 am every weekday.\n",
)
ALICE_INDEX = "Alice notes"
SHARED_INDEX = "Team handbook"

ANSWER = "The Zorblax reactor runs at 451 kelvin [1]."
# What the progress bar says of a file, e.g. "zorblax.md: reading - 50.0%".
PROGRESS = re.compile(r"(zorblax|orchard)\.md: [^\n]* - \d+(\.\d+)?%")
# Records the text of #index-results at every change, to see the progress go by.
WATCH_RESULTS = """() => {
  window.__resultTexts = [];
  const results = document.querySelector('#index-results');
  new MutationObserver(() => window.__resultTexts.push(results.innerText))
    .observe(results, {subtree: true, childList: true, characterData: true});
}"""


@contextmanager
def login_ui(folder: Path) -> Iterator[LiveUI]:
    """The UI with login required, over a scripted LLM, with the three accounts."""
    from ragloom_app.ui.server import serve
    from tests.helpers.scripted_app import scripted_app

    llms = {"scripted": {"class": "ragloom_app.testing.ReplayLLM"}}
    app = scripted_app(folder, llms, None, require_login=True)
    app.accounts.add_user("admin", PASSWORDS["admin"], is_admin=True)
    app.accounts.add_user("alice", PASSWORDS["alice"])
    app.accounts.add_user("bob", PASSWORDS["bob"])
    running = serve(app, port=free_port(), first_run_docs=False, block=False, warm_up=False)
    try:
        yield LiveUI(url=running.url, app=app, demo=running.demo)
    finally:
        running.close()


class Shots:
    """Numbered full-page screenshots in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, page: Page, name: str) -> None:
        self.count += 1
        path = self.folder / f"accounts-{self.count:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)


def pick(page: Page, elem_id: str, option: str) -> None:
    """Choose ``option`` in the gradio dropdown ``#elem_id``."""
    page.locator(f"#{elem_id} input[role=combobox]").click()
    page.get_by_role("option", name=option, exact=True).click()


def options(page: Page, elem_id: str) -> list[str]:
    """The options the gradio dropdown ``#elem_id`` offers (it is opened, then closed)."""
    page.locator(f"#{elem_id} input[role=combobox]").click()
    listed = page.locator("ul[role=listbox] [role=option]")
    listed.first.wait_for(timeout=UI_TIMEOUT)
    names = [text.strip().splitlines()[-1].strip() for text in listed.all_inner_texts()]
    page.keyboard.press("Escape")
    expect(page.locator("ul[role=listbox]")).to_have_count(0)
    return names


def options_or_none(page: Page, elem_id: str) -> list[str]:
    """The options of a dropdown that may offer none."""
    page.locator(f"#{elem_id} input[role=combobox]").click()
    listed = page.locator("ul[role=listbox] [role=option]")
    page.wait_for_timeout(300)
    names = [text.strip().splitlines()[-1].strip() for text in listed.all_inner_texts()]
    page.keyboard.press("Escape")
    expect(page.locator("ul[role=listbox]")).to_have_count(0)
    return names


def shared_sources(live: LiveUI) -> list[str]:
    return [str(s["name"]) for s in live.app.indices.get(SHARED_INDEX).list_sources()]


def log_in(page: Page, url: str, name: str) -> None:
    page.goto(url)
    expect(page).to_have_url(re.compile(r"/login$"), timeout=UI_TIMEOUT)
    page.locator("#name").fill(name)
    page.locator("#password").fill(PASSWORDS[name])
    page.locator("button[type=submit]").click()
    expect(page.locator("#logged-in-user")).to_have_text(name, timeout=UI_TIMEOUT)


def log_out(page: Page) -> None:
    page.locator("#logout").click()
    expect(page).to_have_url(re.compile(r"/login\?ended=1$"), timeout=UI_TIMEOUT)
    expect(page.get_by_role("alert")).to_have_text("You are logged out.")


def create_index(page: Page, name: str, visibility: str) -> None:
    """Create ``name`` from the Files tab's "Manage indices" (left open)."""
    page.get_by_role("tab", name="Files").click()
    accordion = page.locator("#manage-indices")
    if not page.locator("#new-index-name").is_visible():
        accordion.get_by_text("Manage indices").click()
    page.locator("#new-index-name").get_by_role("textbox").fill(name)
    pick(page, "new-index-fileindex-visibility", visibility)
    page.locator("#create-index").click()
    expect(page.locator("#index-admin-status")).to_contain_text(
        f"Created the index '{name}'.", timeout=UI_TIMEOUT
    )
    row = page.locator("#index-table tr", has_text=name)
    expect(row).to_contain_text(visibility)
    # The new index is the selected one, ready for an upload.
    expect(page.locator("#index-selector input[role=combobox]")).to_have_value(name)


def choose_files(page: Page, files: list[Path]) -> None:
    page.locator("#upload input[type=file]").set_input_files([str(f) for f in files])
    for file in files:
        listed = page.locator("#upload").get_by_role("cell", name=file.name, exact=True)
        expect(listed).to_be_visible(timeout=UI_TIMEOUT)


def upload(page: Page, files: list[Path]) -> None:
    """Index ``files`` into the selected index; all of them must be indexed."""
    choose_files(page, files)
    page.locator("#index-button").click()
    results = page.locator("#index-results")
    expect(results).to_contain_text(f"{len(files)} indexed", timeout=UI_TIMEOUT)
    file_list = page.locator("#file-list")
    for file in files:
        expect(results.locator("tr", has_text=file.name)).to_contain_text("indexed")
        expect(file_list.locator("tr", has_text=file.name)).to_contain_text("indexed")


def ask(page: Page, question: str) -> None:
    """Ask in a new conversation and wait until the answer is complete."""
    page.locator("#new-conversation").click()
    expect(page.locator("#chatbot [data-testid=bot]")).to_have_count(0, timeout=UI_TIMEOUT)
    page.locator("#question textarea").fill(question)
    page.locator("#send").click()
    expect(page.locator("#chatbot [data-testid=bot]")).to_have_count(1, timeout=ANSWER_TIMEOUT)
    # The evidence and the steps arrive with the end of the answer, when the inputs unlock.
    expect(page.locator("#usage .rl-usage")).to_be_visible(timeout=ANSWER_TIMEOUT)
    expect(page.locator("#send")).to_be_enabled(timeout=ANSWER_TIMEOUT)


def scripted(live: LiveUI, replies: list[str]) -> ReplayLLM:
    llm = live.app.llm()
    assert isinstance(llm, ReplayLLM)
    llm.replies[:] = list(replies)
    return llm
