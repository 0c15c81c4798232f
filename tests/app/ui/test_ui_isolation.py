"""Every UI handler acts for the user of its request, and for no one else.

Two users and an admin on one app with login on (real SQLite, Chroma and BM25, hash
embeddings, a replay LLM): each handler is called as gradio calls it, with the
``gr.Request`` whose ``username`` the login gate filled in. The browser test
(``tests/e2e/test_browser_accounts.py``) does the same through the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from ragloom_app.accounts import User
from ragloom_app.app import BaseApp
from ragloom_app.index.manager import UnknownIndexError
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.ui.account_tab import AccountHandlers, login_bar_html
from ragloom_app.ui.chat_handlers import ChatHandlers
from ragloom_app.ui.files_tab import FilesHandlers
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.indices_panel import IndexAdminHandlers
from ragloom_app.ui.settings_form import build_settings_form
from tests.helpers.accounts import PASSWORD, app_with_users, existing_user
from tests.helpers.api_server import replay_app
from tests.helpers.file_index import StoreSetup
from tests.helpers.markdown_shown import markdown_html, shown_text

FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture
def app(tmp_path: Path, stores: StoreSetup) -> Iterator[BaseApp]:
    """Alice, Bob and the admin root, on the embedded stores, then on the servers."""
    made = app_with_users(tmp_path, "alice", "bob", admin="root", **stores.servers())
    yield made
    made.jobs.close()  # uploads started its job queue


def _as(app: BaseApp, name: str) -> gr.Request:
    """The request of an event of ``name``'s, as gradio passes it to a handler."""
    return gr.Request(username=existing_user(app, name).id)


def _private_file(app: BaseApp, tmp_path: Path, owner: str, index: str, text: str) -> None:
    made = app.indices.create(index, FILE_INDEX, owner=existing_user(app, owner).id, shared=False)
    path = tmp_path / f"{index}.md"
    path.write_text(text, encoding="utf-8")
    (outcome,) = made.get_indexing_pipeline({}).run([path])
    assert outcome.status == "indexed"


def _panel(app: BaseApp) -> IndexAdminHandlers:
    handlers = IndexAdminHandlers(app, FilesHandlers(app).file_list)
    with gr.Blocks():
        specs = {FILE_INDEX: app.indices.admin_settings(FILE_INDEX)}
        handlers.form = build_settings_form(specs, FILE_INDEX, "new-index")
    return handlers


def _form(handlers: IndexAdminHandlers, visibility: str) -> list[Any]:
    assert handlers.form is not None
    specs = handlers.form.specs[FILE_INDEX]
    return [
        visibility if key == "visibility" else specs[key]["value"] for _, key in handlers.form.keys
    ]


def test_an_event_without_a_user_is_refused_when_login_is_on(app: BaseApp) -> None:
    with pytest.raises(gr.Error, match="Log in first"):
        ui_user(app, gr.Request(username=None))
    alices, gone = _as(app, "alice"), _as(app, "bob")
    app.accounts.set_disabled("alice", True)  # after her page loaded
    with pytest.raises(gr.Error, match="disabled or deleted"):
        list(ChatHandlers(ChatPage(app)).respond("Anything?", "fullqa", None, None, None, alices))
    app.accounts.delete_user("bob")
    with pytest.raises(gr.Error, match="disabled or deleted"):
        ui_user(app, gone)


def test_conversations_are_their_owners_alone(app: BaseApp) -> None:
    chat = ChatHandlers(ChatPage(app))
    alice, bob = _as(app, "alice"), _as(app, "bob")
    *_, last = chat.respond("Where is the reactor?", "fullqa", None, None, None, alice)
    (alices,) = chat.store.list(owner=existing_user(app, "alice").id)
    assert last[4]["choices"] == [(alices["title"], alices["id"])]

    selector, messages, *_ = chat.on_load(None, bob)
    assert selector["choices"] == [] and messages == []
    # Bob names Alice's conversation (its id guessed, or sent by a crafted event).
    with pytest.warns(UserWarning, match="deleted"):
        assert chat.open_conversation(alices["id"], bob)[0] == []
    chat.rename_conversation(alices["id"], "Mine now", bob)
    chat.delete_conversation(alices["id"], bob)
    assert chat.store.get(alices["id"], owner=existing_user(app, "alice").id) is not None
    assert chat.store.get(alices["id"], owner=existing_user(app, "alice").id)["title"] != "Mine now"
    # Asking "in" her conversation starts one of his own instead.
    *_, answered = chat.respond("And the canteen?", "fullqa", alices["id"], None, None, bob)
    assert len(chat.store.messages(alices["id"])) == 2
    (bobs,) = chat.store.list(owner=existing_user(app, "bob").id)
    assert bobs["id"] != alices["id"] and answered[4]["value"] == bobs["id"]

    # Alice finds hers, renames it, searches and deletes it.
    selector, messages, *_ = chat.on_load(None, alice)
    assert selector["value"] == alices["id"] and len(messages) == 2
    chat.rename_conversation(alices["id"], "  Reactor   notes ", alice)
    assert chat.store.get(alices["id"], owner=existing_user(app, "alice").id)["title"] == (
        "Reactor notes"
    )
    assert chat.search_conversations("REACTOR", None, alice)["choices"] == [
        ("Reactor notes", alices["id"])
    ]
    assert chat.search_conversations("canteen", None, alice)["choices"] == []
    # The open one stays a choice though the search leaves it out: gradio refuses a value
    # outside the choices, and would refuse the next question asked in it.
    kept = chat.search_conversations("canteen", alices["id"], alice)
    assert kept["choices"] == [("Reactor notes", alices["id"])] and kept["value"] == alices["id"]
    chat.delete_conversation(alices["id"], alice)
    assert chat.store.list(owner=existing_user(app, "alice").id) == []
    # One deleted meanwhile (in another tab) is chosen no more.
    gone = chat.search_conversations("", alices["id"], alice)
    assert gone["choices"] == [] and gone["value"] is None


def test_a_question_searches_only_what_its_user_may_read(app: BaseApp, tmp_path: Path) -> None:
    _private_file(app, tmp_path, "alice", "Alice notes", "The Zorblax reactor runs at 451 K.")
    chat = ChatHandlers(ChatPage(app))
    alice, bob = _as(app, "alice"), _as(app, "bob")
    *_, filter_for_bob = chat.on_load(None, bob)
    assert filter_for_bob["choices"] == []
    *_, filter_for_alice = chat.on_load(None, alice)
    ((label, value),) = filter_for_alice["choices"]
    assert label == "Alice notes / Alice notes.md"
    # Bob sends Alice's file as his filter value: it is dropped, and nothing of hers is
    # searched, so no citation can name it.
    page = ChatPage(app)
    events = list(page.ask("How hot is the reactor?", user_id=existing_user(app, "bob").id))
    assert isinstance(events[-1], AnswerFinished) and events[-1].record.citations == []
    outputs = list(chat.respond("How hot is the reactor?", "fullqa", None, [value], None, bob))
    assert "Alice notes" not in str(outputs[-1][2])  # the evidence panel
    mine = list(chat.respond("How hot is the reactor?", "fullqa", None, [value], None, alice))
    assert "Alice notes.md" in str(mine[-1][2])


def test_files_and_indices_show_only_what_the_user_may_read(app: BaseApp, tmp_path: Path) -> None:
    _private_file(app, tmp_path, "alice", "Alice notes", "The Zorblax reactor runs at 451 K.")
    files, panel = FilesHandlers(app), _panel(app)
    alice, bob, root = _as(app, "alice"), _as(app, "bob"), _as(app, "root")
    selector, _ = files.on_load(None, bob)
    assert "Alice notes" not in selector["choices"]
    assert "Alice notes" not in panel.table(bob)
    with pytest.warns(UserWarning, match="no index named"):
        assert "Alice notes.md" not in files.file_list("Alice notes", bob)
    assert "Alice notes.md" in files.file_list("Alice notes", alice)
    table = panel.table(alice)
    assert "Alice notes" in table and "private" in table and "alice" in table
    # An admin manages accounts, not other users' private files.
    assert "Alice notes" not in panel.table(root)
    upload = tmp_path / "extra.md"
    upload.write_text("More.", encoding="utf-8")
    with pytest.raises(gr.Error, match="no index named"):
        files.index_files("Alice notes", [str(upload)], bob, progress=lambda *a, **k: None)
    with pytest.warns(UserWarning):
        assert "no index named" in panel.delete("Alice notes", None, [], bob).status
    # An index gone (an API delete that lost a race to another) is named alone, never
    # with the others: once, all of them were listed, private ones included.
    with pytest.raises(UnknownIndexError) as gone:
        app.indices.delete("Gone meanwhile")
    assert str(gone.value) == "no index named 'Gone meanwhile'"
    assert [i.name for i in app.indices.readable_by(existing_user(app, "alice").id)][
        -1
    ] == "Alice notes"


def test_a_shared_index_is_read_by_all_and_written_by_its_owner(
    app: BaseApp, tmp_path: Path
) -> None:
    files, panel = FilesHandlers(app), _panel(app)
    alice, bob, root = _as(app, "alice"), _as(app, "bob"), _as(app, "root")
    with pytest.warns(UserWarning, match="only an admin makes a shared index"):
        refused = panel.create("Handbook", FILE_INDEX, [], alice, *_form(panel, "shared"))
    assert "only an admin" in refused.status
    made = panel.create("Handbook", FILE_INDEX, [], root, *_form(panel, "shared"))
    assert made.status == "Created the index 'Handbook'."
    assert "Handbook" in panel.table(bob) and "shared" in panel.table(bob)
    assert "Handbook" not in str(panel.on_load(None, bob)[0]["choices"])  # not his to delete
    page = tmp_path / "handbook.md"
    page.write_text("Lunch is at noon.", encoding="utf-8")
    with pytest.raises(gr.Error, match="shared with you to search, not to change"):
        files.index_files("Handbook", [str(page)], bob, progress=lambda *a, **k: None)
    _, listing, _ = files.index_files("Handbook", [str(page)], root, progress=lambda *a, **k: None)
    assert "handbook.md" in listing
    assert "handbook.md" in files.file_list("Handbook", bob)
    private = panel.create("Bob only", FILE_INDEX, [], bob, *_form(panel, "private"))
    assert private.status == "Created the index 'Bob only'."
    assert "Bob only" not in panel.table(alice)


def test_the_account_tab_keys_and_admin_actions(app: BaseApp) -> None:
    accounts = AccountHandlers(app)
    alice, root = _as(app, "alice"), _as(app, "root")
    shown, table, _ = accounts.create_key("laptop", alice)
    key = shown.split('<code id="new-api-key">')[1].split("</code>")[0]
    assert app.accounts.key_user(key) == existing_user(app, "alice")
    assert "laptop" in table and key not in table  # the listing never holds the key
    (info,) = app.accounts.keys(existing_user(app, "alice"))
    assert "laptop" not in accounts.revoke_key(info.id, alice)[0]
    assert app.accounts.key_user(key) is None

    with pytest.raises(gr.Error, match="Only an admin"):
        accounts.act("add", "eve", PASSWORD, True, alice)
    status, users, password_box = accounts.act("add", "carol", PASSWORD, False, root)
    assert status == "Added carol." and "carol" in users and password_box["value"] == ""
    assert accounts.act("disable", "carol", "", False, root)[0].startswith("Disabled carol")
    assert app.accounts.login is not None and "disabled" in accounts.users_table(root)
    with pytest.warns(UserWarning, match="cannot disable or delete itself"):
        accounts.act("delete", "root", "", False, root)
    with pytest.warns(UserWarning, match="at least"):
        accounts.act("password", "alice", "short", False, root)
    deleted = accounts.act("delete", "carol", "", False, root)[0]
    assert shown_text(deleted) == "Deleted carol, with no conversations and no private indices."
    assert app.accounts.user_named("carol") is None


def test_names_show_as_written_in_the_account_status(app: BaseApp) -> None:
    """The status is Markdown: a user's name (www.… would be a link) and the names of the
    private indices its deletion took are text there."""
    accounts, root = AccountHandlers(app), _as(app, "root")
    added = accounts.act("add", "www.evil.example", PASSWORD, False, root)[0]
    with pytest.warns(UserWarning, match="already"):
        again = accounts.act("add", "www.evil.example", PASSWORD, False, root)[0]
    hostile = "![p](https:evil.example) [Cancel](https:e.example) <img src=x>"
    owner = existing_user(app, "www.evil.example").id
    app.indices.create(hostile, FILE_INDEX, owner=owner, shared=False)
    deleted = accounts.act("delete", "www.evil.example", "", False, root)[0]
    assert shown_text(added) == "Added www.evil.example."
    assert "www.evil.example" in shown_text(again) and hostile in shown_text(deleted)
    for markdown in (added, again, deleted):
        assert not re.search(r"<(a|img)\b", markdown_html(markdown))
        assert "www.evil" not in markdown and "https:" not in markdown  # nor a GFM autolink


def test_the_login_bar_escapes_the_name_and_carries_the_logout_token() -> None:
    user = User(id="u1", name="<b>x</b>", is_admin=True)
    bar = login_bar_html(user, "session-secret")
    assert "&lt;b&gt;x&lt;/b&gt;" in bar and "(admin)" in bar
    assert 'action="/logout"' in bar and "session-secret" not in bar


def test_each_user_opens_the_chat_with_its_own_saved_defaults(app: BaseApp) -> None:
    from ragloom_app.ui.chat_tab import build_chat_tab

    with gr.Blocks() as demo:
        tab = build_chat_tab(demo, ChatPage(app))
    handlers, form = tab.handlers, tab.settings
    alice, bob = _as(app, "alice"), _as(app, "bob")
    values = [form.specs[owner][key]["value"] for owner, key in form.keys]
    values[form.keys.index(("rewoo", "max_steps"))] = 5
    status = handlers.save_defaults("rewoo", {"My files": {"mmr": True}}, alice, *values)
    assert status.startswith("Saved")

    mode, *shown, index_values = handlers.load_defaults(alice)
    assert mode["value"] == "rewoo" and "plan" in mode["info"].lower()
    assert shown[form.keys.index(("rewoo", "max_steps"))] == 5
    assert index_values == {"My files": {"mmr": True}}
    mode, *shown, index_values = handlers.load_defaults(bob)
    assert mode["value"] == app.settings.default_reasoning
    assert shown[form.keys.index(("rewoo", "max_steps"))] == 3 and index_values == {}


def test_the_index_settings_are_drawn_with_the_users_saved_values(app: BaseApp) -> None:
    from ragloom_app.accounts.preferences import ChatDefaults, ChatDefaultsStore
    from ragloom_app.ui.chat_tab import build_chat_tab

    ChatDefaultsStore(app.engine).save(
        existing_user(app, "alice").id, ChatDefaults(indices={"My files": {"mmr": True}})
    )
    with gr.Blocks() as demo:
        tab = build_chat_tab(demo, ChatPage(app))
    for name, expected in (("alice", True), ("bob", False)):
        with gr.Blocks() as drawn:
            tab.index_search.draw(_as(app, name))
        (mmr,) = [c for c in drawn.blocks.values() if c.elem_id == "index-setting-my-files-mmr"]
        assert mmr.value is expected, name


def test_a_private_index_left_out_at_startup_is_named_to_its_owner_only(
    app: BaseApp, tmp_path: Path, stores: StoreSetup
) -> None:
    from sqlmodel import Session, select

    from ragloom_app.db.models import IndexRecord
    from ragloom_app.ui.plugins_tab import plugins_page_html

    app.indices.create(
        "Alice taxes", FILE_INDEX, owner=existing_user(app, "alice").id, shared=False
    )
    with Session(app.engine) as session:
        record = session.exec(select(IndexRecord).where(IndexRecord.name == "Alice taxes")).one()
        record.index_type = "gone_plugin.Index"  # its plugin was uninstalled
        session.add(record)
        session.commit()
    again = replay_app(tmp_path, require_login=True, **stores.servers())
    alice, bob = existing_user(again, "alice").id, existing_user(again, "bob").id
    assert "Alice taxes" in again.indices.unavailable_to(alice)
    assert again.indices.unavailable_to(bob) == {}
    assert "Alice taxes" in plugins_page_html(again, alice)
    assert "Alice taxes" not in plugins_page_html(again, bob)
    assert "Alice taxes" not in _panel(again).table(_as(again, "root"))  # nor to an admin
