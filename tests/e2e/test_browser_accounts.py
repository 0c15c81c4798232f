"""Login and per-user isolation in the web UI, driven in chromium as people drive it.

The UI is served in-process on loopback with ``REQUIRE_LOGIN`` on, over a scripted LLM
(``ReplayLLM``, its replies set by the test before each question, so no real model runs)
and hashed embeddings; the accounts ``admin`` (an admin), ``alice`` and ``bob`` are made
beforehand through ``app.accounts``. Two browser contexts (two cookie jars, as two
people's browsers) are open at once: alice's, and the other, where the admin works and
logs out before bob logs in.

- ``/`` without a session goes to ``/login``; a wrong password stays there, with an error.
- alice makes a private index, uploads two files into it and follows the indexing, then
  asks in every reasoning mode: the answer, its evidence citing her file, and the steps.
- the admin makes a shared index and uploads a file into it.
- bob sees nothing of alice's (conversations, index, files, file filter; a question on her
  document cites nothing of hers and her text never reaches the LLM); he sees and searches
  the shared index, but cannot upload into it.
- alice sees the shared index too; she logs out, and ``/`` sends her to log in again.

A full-page screenshot of each step goes to ``RAGLOOM_SCREENSHOTS`` if set, else to a
folder of the test's ``tmp_path``; the folder is printed (``pytest -s``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from ragloom_app.api.auth import SESSION_COOKIE
from tests.e2e.conftest import LiveUI
from tests.helpers.browser_accounts import (
    ALICE_FILES,
    ALICE_INDEX,
    ANSWER,
    PASSWORDS,
    PROGRESS,
    SHARED_FILE,
    SHARED_INDEX,
    UI_TIMEOUT,
    WATCH_RESULTS,
    Shots,
    ask,
    choose_files,
    create_index,
    log_in,
    log_out,
    login_ui,
    options,
    options_or_none,
    pick,
    scripted,
    shared_sources,
    upload,
)

pytestmark = pytest.mark.browser

# One question per mode (each in a conversation of its own), with the LLM's replies before
# the final answer: the same scripts as tests/app/reasoning/test_grounding_modes.py.
MODES: list[tuple[str, str, list[str], str]] = [
    # (mode's name in the selector, question, replies, text the steps panel must show)
    ("FullQA", "At what temperature does the Zorblax reactor run?", [ANSWER], "mode fullqa"),
    (
        "Decomposition",
        "How hot is the Zorblax reactor, in parts?",
        ["1. How hot is the Zorblax reactor?\n", "451 kelvin [1].", ANSWER],
        "mode decompose",
    ),
    (
        "ReAct agent",
        "Find out how hot the Zorblax reactor runs.",
        [
            "Thought: I should look it up.\nAction: docsearch\nAction Input: Zorblax reactor",
            f"Thought: I know it.\nFinal Answer: {ANSWER}",
        ],
        "mode react",
    ),
    (
        "ReWOO agent",
        "Plan how to learn the Zorblax reactor's temperature.",
        ["#Plan1: Find the temperature.\n#E1 = docsearch[Zorblax reactor temperature]\n", ANSWER],
        "mode rewoo",
    ),
    # A single-fact question: auto routes it to FullQA, whose answer passes the check.
    ("Auto", "How hot is the Zorblax reactor?", [ANSWER], "route fullqa"),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveUI]:
    with login_ui(tmp_path_factory.mktemp("accounts-ui")) as running:
        yield running


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    folder = Path(os.environ.get("RAGLOOM_SCREENSHOTS") or tmp_path / "screenshots")
    print(f"screenshots: {folder}")
    return Shots(folder)


def test_the_login_form_posts_from_a_real_browser(browser: Browser, live: LiveUI) -> None:
    """The login form as chromium posts it. Under ``Referrer-Policy: no-referrer`` chromium
    sent ``Origin: null`` with it, which the host guard refused as another site's."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(live.url)
        expect(page).to_have_url(re.compile(r"/login$"), timeout=UI_TIMEOUT)
        page.locator("#name").fill("bob")
        page.locator("#password").fill(PASSWORDS["bob"])
        with page.expect_response(
            lambda r: r.request.method == "POST" and r.url.endswith("/login")
        ) as posted:
            page.locator("button[type=submit]").click()
        answer = posted.value
        assert answer.status == 303, f"{answer.status}: {answer.text()[:200]}"
    finally:
        context.close()


def test_logins_keep_each_users_indices_files_and_conversations_apart(
    browser: Browser, live: LiveUI, tmp_path: Path, shots: Shots
) -> None:
    docs = tmp_path / "uploads"
    docs.mkdir()
    for name, text in [*ALICE_FILES.items(), SHARED_FILE]:
        (docs / name).write_text(text, encoding="utf-8")
    alice_files = [docs / name for name in ALICE_FILES]
    shared_file = docs / SHARED_FILE[0]

    alice_context = browser.new_context(viewport={"width": 1400, "height": 900})
    other_context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        alice = alice_context.new_page()
        other = other_context.new_page()

        # -- 1. No session: the login page; a wrong password stays there. --------------
        alice.goto(live.url)
        expect(alice).to_have_url(re.compile(r"/login$"), timeout=UI_TIMEOUT)
        expect(alice.locator("#name")).to_be_visible()
        expect(alice.locator("#password")).to_be_visible()
        shots(alice, "login-page")
        alice.locator("#name").fill("alice")
        alice.locator("#password").fill("not-her-password")
        alice.locator("button[type=submit]").click()
        expect(alice.get_by_role("alert")).to_contain_text(
            "the name or the password is not right", timeout=UI_TIMEOUT
        )
        expect(alice).to_have_url(re.compile(r"/login$"))
        expect(alice.locator("#name")).to_have_value("alice")
        expect(alice.locator("#logged-in-user")).to_have_count(0)
        shots(alice, "wrong-password")

        # -- 2. alice logs in, makes a private index and fills it. ---------------------
        log_in(alice, live.url, "alice")
        expect(alice.locator("#login-bar")).to_contain_text("Logged in as alice")
        expect(alice.get_by_role("tab", name="Account")).to_be_visible()
        shots(alice, "alice-logged-in")
        create_index(alice, ALICE_INDEX, "private")
        alice_row = alice.locator("#index-table tr", has_text=ALICE_INDEX)
        expect(alice_row).to_contain_text("alice")  # the owner
        choose_files(alice, alice_files)
        alice.evaluate(WATCH_RESULTS)
        alice.locator("#index-button").click()
        results = alice.locator("#index-results")
        try:  # a screenshot of the progress, if it lasts long enough to be caught
            expect(results).to_contain_text(PROGRESS, timeout=5_000)
            shots(alice, "alice-indexing")
        except AssertionError:
            pass
        expect(results).to_contain_text("2 indexed", timeout=UI_TIMEOUT)
        # The progress showed file by file where the outcomes then appeared (each change of
        # the results was recorded, so a quick indexing is seen too).
        seen = alice.evaluate("window.__resultTexts")
        progress = [t for t in seen if PROGRESS.search(t) and "indexed" not in t]
        assert progress, f"no progress was shown: {seen}"
        for name in ALICE_FILES:
            expect(results.locator("tr", has_text=name)).to_contain_text("indexed")
            expect(alice.locator("#file-list tr", has_text=name)).to_contain_text("indexed")
        expect(alice_row).to_contain_text("2 files")
        shots(alice, "alice-indexed")

        # -- 3. alice asks in every mode: answer, evidence, steps. ---------------------
        alice.get_by_role("tab", name="Chat").click()
        alice.locator("#usage-accordion").get_by_text("Steps and usage").click()
        for mode, question, replies, step_text in MODES:
            pick(alice, "mode-selector", mode)
            scripted(live, replies)
            ask(alice, question)
            bot = alice.locator("#chatbot [data-testid=bot]").last
            expect(bot).to_contain_text("451 kelvin")
            expect(bot.locator("span.rl-claim.rl-supported").first).to_be_visible()
            evidence = alice.locator("#evidence")
            expect(evidence).to_contain_text(re.compile(r"\[1\] zorblax\.md"))
            expect(evidence).to_contain_text("451 kelvin")
            usage = alice.locator("#usage")
            expect(usage).to_contain_text(step_text)
            if mode != "FullQA":  # the agent modes (and auto's routing) show steps
                expect(usage.locator("ul.rl-steps > li").first).to_be_visible()
            if mode in ("ReAct agent", "ReWOO agent"):
                expect(usage).to_contain_text("docsearch")
            shots(alice, f"alice-{mode.split()[0].lower()}")
        conversations = alice.locator("#conversation-list").get_by_role("radio")
        expect(conversations).to_have_count(len(MODES))

        # -- 4. The admin (the other browser) makes a shared index and fills it. -------
        log_in(other, live.url, "admin")
        expect(other.locator("#login-bar")).to_contain_text("(admin)")
        expect(other.locator("#conversation-list").get_by_role("radio")).to_have_count(0)
        other.get_by_role("tab", name="Account").click()
        expect(other.locator("#admin-users").first).to_be_visible(timeout=UI_TIMEOUT)
        expect(other.locator("#user-table")).to_contain_text("bob")
        # An API key, shown once, that the HTTP API then takes.
        other.locator("#key-name").get_by_role("textbox").fill("ci")
        other.locator("#create-key").click()
        key = other.locator("#new-api-key")
        expect(key).to_contain_text("rlk_", timeout=UI_TIMEOUT)
        expect(other.locator("#key-table")).to_contain_text("ci")
        me = httpx.get(
            f"{live.url}api/v1/me", headers={"Authorization": f"Bearer {key.inner_text()}"}
        )
        assert me.json() == {"name": "admin", "is_admin": True}, me.text
        # The admin adds a user from the form.
        other.locator("#user-name").get_by_role("textbox").fill("carol")
        other.locator("#user-password").get_by_role("textbox").fill("carol-password-1")
        other.locator("#user-apply").click()
        expect(other.locator("#user-status")).to_contain_text("Added carol.", timeout=UI_TIMEOUT)
        expect(other.locator("#user-table")).to_contain_text("carol")
        expect(other.locator("#user-password").get_by_role("textbox")).to_have_value("")
        shots(other, "admin-account-tab")
        create_index(other, SHARED_INDEX, "shared")
        expect(other.locator("#index-table")).not_to_contain_text(ALICE_INDEX)
        upload(other, [shared_file])
        shots(other, "admin-shared-index")
        log_out(other)

        # -- 5. bob, in the same other browser: nothing of alice's. --------------------
        log_in(other, live.url, "bob")
        bob = other
        expect(bob.locator("#conversation-list").get_by_role("radio")).to_have_count(0)
        expect(bob.locator("#chatbot [data-testid=bot]")).to_have_count(0)
        bob.locator("#conversation-search").get_by_role("textbox").fill("Zorblax")
        expect(bob.locator("#conversation-list").get_by_role("radio")).to_have_count(0)
        filter_options = options(bob, "file-filter")
        assert filter_options == [f"{SHARED_INDEX} / handbook.md"], filter_options
        bob.get_by_role("tab", name="Account").click()
        expect(bob.locator("#admin-users").first).to_be_hidden()
        bob.get_by_role("tab", name="Files").click()
        index_options = options(bob, "index-selector")
        assert index_options == ["My files", SHARED_INDEX], index_options
        bob.locator("#manage-indices").get_by_text("Manage indices").click()
        table = bob.locator("#index-table")
        shared_row = table.locator("tr", has_text=SHARED_INDEX)
        expect(shared_row).to_contain_text("shared", timeout=UI_TIMEOUT)
        expect(shared_row).to_contain_text("admin")
        expect(table).not_to_contain_text(ALICE_INDEX)
        expect(table).not_to_contain_text("alice")
        # He cannot delete the shared index either: it is not his.
        assert SHARED_INDEX not in options_or_none(bob, "delete-index-selector")
        shots(bob, "bob-files")

        # He cannot add files to the shared index: a toast says why.
        pick(bob, "index-selector", SHARED_INDEX)
        expect(bob.locator("#file-list")).to_contain_text("handbook.md", timeout=UI_TIMEOUT)
        choose_files(bob, [alice_files[1]])
        bob.locator("#index-button").click()
        toast = bob.locator("[data-testid=toast-body]")
        expect(toast).to_contain_text(
            f"The index '{SHARED_INDEX}' is shared with you to search, not to change",
            timeout=UI_TIMEOUT,
        )
        expect(toast).to_be_visible()
        bob.wait_for_timeout(800)  # the toast flies in
        shots(bob, "bob-upload-refused")
        expect(bob.locator("#file-list")).not_to_contain_text("orchard.md")
        assert not [s for s in shared_sources(live) if s != "handbook.md"]

        # A question on alice's document: nothing of hers is cited, or sent to the LLM.
        # (The check before answering finds no "Zorblax" in bob's files and declines,
        # citing the closest passages he may read: the LLM is not even called.)
        bob.get_by_role("tab", name="Chat").click()
        bob.locator("#usage-accordion").get_by_text("Steps and usage").click()
        pick(bob, "mode-selector", "FullQA")
        llm = scripted(live, [ANSWER])
        prompts_before = len(llm.prompts)
        ask(bob, "At what temperature does the Zorblax reactor run?")
        bot = bob.locator("#chatbot [data-testid=bot]").last
        expect(bot).not_to_contain_text("451")
        evidence = bob.locator("#evidence")
        expect(evidence).not_to_contain_text("zorblax.md")
        expect(evidence).not_to_contain_text("orchard.md")
        expect(evidence).not_to_contain_text("451 kelvin")
        sent = " ".join(m.content for p in llm.prompts[prompts_before:] for m in p)
        assert "451 kelvin" not in sent and "Quillon" not in sent
        shots(bob, "bob-asks-about-alices-file")

        # A question on the shared file: it is cited.
        scripted(live, ["The Frobnitz office opens at 8 am [1]."])
        ask(bob, "When does the Frobnitz office open?")
        bot = bob.locator("#chatbot [data-testid=bot]").last
        expect(bot).to_contain_text("8 am")
        expect(bot.locator("span.rl-claim.rl-supported").first).to_be_visible()
        expect(evidence).to_contain_text(re.compile(r"\[1\] handbook\.md"))
        expect(evidence).not_to_contain_text("zorblax.md")
        shots(bob, "bob-asks-about-the-shared-file")

        # -- 6. alice sees the shared index too, then logs out. ------------------------
        alice.reload()
        expect(alice.locator("#logged-in-user")).to_have_text("alice", timeout=UI_TIMEOUT)
        # Her most recent conversation reopens; bob's never shows.
        expect(alice.locator("#conversation-list").get_by_role("radio")).to_have_count(
            len(MODES), timeout=UI_TIMEOUT
        )
        expect(alice.locator("#conversation-list")).not_to_contain_text("Frobnitz")
        alice.get_by_role("tab", name="Files").click()
        index_options = options(alice, "index-selector")
        assert index_options == ["My files", ALICE_INDEX, SHARED_INDEX], index_options
        alice.locator("#manage-indices").get_by_text("Manage indices").click()
        shared_row = alice.locator("#index-table tr", has_text=SHARED_INDEX)
        expect(shared_row).to_contain_text("shared", timeout=UI_TIMEOUT)
        expect(shared_row).to_contain_text("admin")
        alice.get_by_role("tab", name="Chat").click()
        filter_options = options(alice, "file-filter")
        assert f"{SHARED_INDEX} / handbook.md" in filter_options, filter_options
        assert f"{ALICE_INDEX} / zorblax.md" in filter_options, filter_options
        shots(alice, "alice-sees-the-shared-index")
        (session,) = [c for c in alice_context.cookies() if c["name"] == SESSION_COOKIE]
        log_out(alice)
        # The session ended on the server, not only in her browser.
        assert live.app.accounts.session_user(session["value"]) is None
        assert not [c for c in alice_context.cookies() if c["name"] == SESSION_COOKIE]
        shots(alice, "alice-logged-out")
        alice.goto(live.url)
        expect(alice).to_have_url(re.compile(r"/login$"), timeout=UI_TIMEOUT)
        expect(alice.locator("#logged-in-user")).to_have_count(0)
        shots(alice, "alice-sent-to-login")
    finally:
        alice_context.close()
        other_context.close()
