"""Managing indices from the Files tab: the handlers behind the form, on a real app."""

from __future__ import annotations

import re
from pathlib import Path

import gradio as gr
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.worklock import WorkLock
from ragloom_app.ui import file_filter, render
from ragloom_app.ui.indices_panel import IndexAdminHandlers
from ragloom_app.ui.settings_form import build_settings_form
from tests.helpers.file_index import StoreSetup
from tests.helpers.markdown_shown import markdown_html, shown_text

FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture
def app(tmp_path: Path, stores: StoreSetup) -> BaseApp:
    """An app on the embedded stores, then on the servers."""
    return BaseApp(stores.app_settings(tmp_path / "data")).start()


@pytest.fixture
def handlers(app: BaseApp) -> IndexAdminHandlers:
    handlers = IndexAdminHandlers(app, lambda name, request: render.sources_html([], name))
    with gr.Blocks():
        specs = {FILE_INDEX: app.indices.index_types[FILE_INDEX].get_admin_settings()}
        handlers.form = build_settings_form(specs, FILE_INDEX, "new-index")
    return handlers


CHOSEN = {
    "chunk_size": 120.0,  # gradio numbers arrive as floats
    "chunk_overlap": 10.0,
    "extensions": [".md"],
    "visibility": "shared",
}


def _form_values(handlers: IndexAdminHandlers, **changes: object) -> list[object]:
    """The form's values in its own order: the defaults, then CHOSEN, then ``changes``."""
    assert handlers.form is not None
    values = {**CHOSEN, **changes}
    specs = handlers.form.specs[FILE_INDEX]
    return [values.get(key, specs[key]["value"]) for _, key in handlers.form.keys]


def test_create_makes_the_index_and_refreshes_every_selector(
    app: BaseApp, handlers: IndexAdminHandlers
) -> None:
    out = handlers.create(" Team ", FILE_INDEX, [], None, *_form_values(handlers))
    selector, files, delete_selector, table, chat_filter, status, confirm, new_name = out
    config = app.indices.get("Team").config
    assert {key: config[key] for key in CHOSEN} == {
        "chunk_size": 120,
        "chunk_overlap": 10,
        "extensions": [".md"],
        "visibility": "shared",
    }
    assert selector == {"__type__": "update", "choices": ["My files", "Team"], "value": "Team"}
    assert delete_selector["choices"] == ["My files", "Team"]
    assert "No files in &#x27;Team&#x27; yet" in files
    assert "Team" in table and "shared" in table and "120" in table
    assert chat_filter["choices"] == [] and status == "Created the index 'Team'."
    assert confirm == {"__type__": "update", "visible": False}
    assert new_name == ""  # the name box is emptied for the next index


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("", {}, "needs a name"),
        ("My files", {}, "is taken already"),
        ("Tiny", {"chunk_size": 8.0}, "at least 16 tokens"),
        ("Wide", {"chunk_overlap": 500.0}, "chunk overlap must be in"),
        ("None", {"extensions": []}, "file types must be some of"),
    ],
)
def test_bad_input_creates_nothing_and_says_why(
    app: BaseApp, handlers: IndexAdminHandlers, name: str, changes: dict, message: str
) -> None:
    with pytest.warns(UserWarning):
        out = handlers.create(name, FILE_INDEX, [], None, *_form_values(handlers, **changes))
    assert message in out[5]
    assert all(value == gr.skip() for value in out[:5])
    assert [i.name for i in app.indices.indices] == ["My files"]


def test_delete_asks_first_then_removes_the_index(
    app: BaseApp, handlers: IndexAdminHandlers
) -> None:
    handlers.create("Team", FILE_INDEX, [], None, *_form_values(handlers))
    data_dir = app.indices.get("Team").resources.data_dir
    box, question, confirmed = handlers.ask_delete("Team")
    assert box["visible"] is True and confirmed == "Team"
    assert "Delete the index **Team** and its 0 files" in question
    assert handlers.cancel_delete() == ({"__type__": "update", "visible": False}, "", None)
    assert [i.name for i in app.indices.indices] == ["My files", "Team"]
    out = handlers.delete("Team", "Team", [])
    assert [i.name for i in app.indices.indices] == ["My files"]
    # The Files tab showed the deleted index: it moves to the first one left.
    assert out[0] == {"__type__": "update", "choices": ["My files"], "value": "My files"}
    assert out[5] == "Deleted the index 'Team'." and out[6]["visible"] is False
    assert not data_dir.exists()
    with pytest.warns(UserWarning):
        assert "no index named 'Team'" in handlers.delete("Team", "My files", [])[5]


NAME_RULE = (
    "an index name is 1 to 80 characters, not only digits, "
    "without '/', '\\', control or text-direction characters"
)


@pytest.mark.parametrize("name", ["notes/2024", "notes\\2024", "x" * 81, "1" * 200])
def test_the_index_name_rule_is_shown_whole(handlers: IndexAdminHandlers, name: str) -> None:
    """The rule is Ragloom's own words: its '/' is a character, not a path to hide."""
    with pytest.warns(UserWarning, match="control or text-direction characters"):
        out = handlers.create(name, FILE_INDEX, [], None, *_form_values(handlers))
    assert shown_text(out.status) == f"Could not create {name!r}: {NAME_RULE}"


def test_an_index_types_own_words_are_still_scrubbed(
    app: BaseApp, handlers: IndexAdminHandlers, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(type_id: str, config: object) -> None:
        raise ValueError("no template at /srv/ragloom/templates/team.cfg")

    monkeypatch.setattr(app.indices, "normalize_config", refuse)
    with pytest.warns(UserWarning, match="path hidden"):
        out = handlers.create("Team", FILE_INDEX, [], None, *_form_values(handlers))
    assert shown_text(out.status) == "Could not create 'Team': no template at [path hidden]"


# An image, a link to show beside "Yes, delete it", a tag and an autolink (80 characters).
HOSTILE_NAME = "![p](https:evil.example?q=1) [Cancel](https:e.example) <img src=x> www.e.example"


def test_an_index_name_shows_as_written_wherever_the_panel_names_it(
    app: BaseApp, handlers: IndexAdminHandlers
) -> None:
    """The status line and the delete question are Markdown: a name is text there."""
    made = handlers.create(HOSTILE_NAME, FILE_INDEX, [], None, *_form_values(handlers))
    with pytest.warns(UserWarning, match="is taken already"):
        taken = handlers.create(HOSTILE_NAME, FILE_INDEX, [], None, *_form_values(handlers))
    _, question, _ = handlers.ask_delete(HOSTILE_NAME)
    deleted = handlers.delete(HOSTILE_NAME, None, [])
    with pytest.warns(UserWarning, match="no index named"):
        gone = handlers.delete(HOSTILE_NAME, None, [])
    assert shown_text(made.status) == f"Created the index {HOSTILE_NAME!r}."
    assert shown_text(question).startswith(f"Delete the index {HOSTILE_NAME} and its 0 files")
    assert "<strong>" in markdown_html(question)  # the name still in bold
    assert shown_text(deleted.status) == f"Deleted the index {HOSTILE_NAME!r}."
    for markdown in (made.status, taken.status, question, deleted.status, gone.status):
        assert HOSTILE_NAME in shown_text(markdown)
        assert not re.search(r"<(a|img)\b", markdown_html(markdown))
        # Nor a link for the browser's GFM parser, which links www. and schemes bare.
        assert "www.e" not in markdown and "https:" not in markdown


def test_an_index_files_are_being_indexed_into_is_not_deleted(
    app: BaseApp, handlers: IndexAdminHandlers
) -> None:
    """As the API refuses it: the owner cancels the jobs or waits."""
    handlers.create("Team", FILE_INDEX, [], None, *_form_values(handlers))
    team_id = app.indices.get("Team").id
    job = app.jobs.store.create(index_id=team_id, owner=LOCAL_USER, kind="add", files=[])
    with pytest.warns(UserWarning, match="being indexed into"):
        handlers.delete("Team", "Team", [])
    assert [i.name for i in app.indices.indices] == ["My files", "Team"]
    app.jobs.cancel(job.id, LOCAL_USER)
    assert handlers.delete("Team", "Team", [])[5] == "Deleted the index 'Team'."


def test_an_index_an_import_is_filling_is_not_deleted(
    app: BaseApp, handlers: IndexAdminHandlers
) -> None:
    handlers.create("Team", FILE_INDEX, [], None, *_form_values(handlers))
    index = app.indices.get("Team")
    assert isinstance(index, FileIndex)
    mark = WorkLock(index.locks_dir, IMPORT_LOCK)
    mark.acquire_new()  # as an import holds it while it fills the index
    try:
        with pytest.warns(UserWarning, match="an import is still filling it"):
            handlers.delete("Team", "Team", [])
    finally:
        mark.release()
    assert [i.name for i in app.indices.indices] == ["My files", "Team"]
    assert handlers.delete("Team", "Team", [])[5] == "Deleted the index 'Team'."


def test_file_filter_lists_indexed_files_across_indices(app: BaseApp, tmp_path: Path) -> None:
    team = app.indices.create("Team", FILE_INDEX)
    (tmp_path / "plan.md").write_text("# Plan\n\nShip the reactor in May.\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_bytes(b"")
    team.get_indexing_pipeline({}).run([tmp_path / "plan.md", tmp_path / "empty.txt"])
    (source,) = [s for s in team.list_sources() if s["status"] == "indexed"]
    value = f"{team.id}/{source['id']}"
    # Not the failed file.
    assert file_filter.file_choices(app, LOCAL_USER) == [("Team / plan.md", value)]
    assert file_filter.selected_sources(app, [], LOCAL_USER) is None
    chosen = file_filter.selected_sources(app, [value], LOCAL_USER)
    assert chosen == {"My files": [], "Team": [source["id"]]}
    update = file_filter.filter_update(app, [value, "99/gone"], LOCAL_USER)
    assert update["value"] == [value]
