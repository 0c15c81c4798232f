"""Forms built from setting specs, and the chat's settings reaching the request."""

from __future__ import annotations

import math
from pathlib import Path

import gradio as gr

from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.pages.chat import ChatPage
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from ragloom_app.ui.chat_handlers import ChatHandlers
from ragloom_app.ui.index_settings import index_specs, remember, sent
from ragloom_app.ui.settings_form import build_settings_form, coerce_value

SPECS = {
    "alpha": {
        "k": {"name": "K", "value": 3, "component": "number", "minimum": 1},
        "on": {"name": "On", "value": False, "component": "checkbox"},
    },
    "beta": {
        "how": {"name": "How", "value": "x", "component": "dropdown", "choices": [("X", "x")]},
        "weight": {"name": "W", "value": 0.5, "component": "number", "step": 0.1},
        "note": {"name": "Note", "value": "", "component": "something new"},
    },
}


def test_one_group_per_owner_only_the_selected_one_visible() -> None:
    with gr.Blocks():
        form = build_settings_form(SPECS, "alpha", "setting")
    assert list(form.groups) == ["alpha", "beta"]
    assert [g.visible for g in form.groups.values()] == [True, False]
    kinds = [type(c).__name__ for c in form.components]
    assert kinds == ["Number", "Checkbox", "Dropdown", "Number", "Textbox"]
    assert [c.elem_id for c in form.components][:2] == ["setting-alpha-k", "setting-alpha-on"]
    assert form.components[0].precision == 0 and form.components[3].precision is None
    assert form.show("beta") == [
        {"__type__": "update", "visible": False},
        {"__type__": "update", "visible": True},
    ]


def test_values_are_typed_and_only_the_owners_are_kept() -> None:
    with gr.Blocks():
        form = build_settings_form(SPECS, "alpha", "setting")
    values = (5.0, 1, "x", 1, None)
    assert form.values_for("alpha", values) == {"k": 5, "on": True}
    assert form.values_for("beta", values) == {"how": "x", "weight": 1.0, "note": ""}
    assert coerce_value({"value": 2}, 2.7) == 2 and coerce_value({"value": "a"}, None) == "a"
    # Left for the server's typed check to refuse in words: int() would raise.
    assert math.isnan(coerce_value({"value": 2}, math.nan))
    assert coerce_value({"value": 2}, math.inf) == math.inf


def test_the_chat_sends_the_selected_modes_settings(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    handlers = ChatHandlers(ChatPage(app))
    assert handlers.request_settings("fullqa", ()) == {}
    with gr.Blocks():
        handlers.settings_form = build_settings_form(handlers.mode_settings(), "fullqa", "s")
    specs = handlers.mode_settings()
    # (The search settings are each index's own now: test_index_settings_reach_the_request.)
    given = {"top_k": 2.0, "focus_sentences": 0}
    # One value per component of every mode's form; only FullQA's are changed.
    values = tuple(
        given.get(key, specs[owner][key]["value"])
        if owner == "fullqa"
        else specs[owner][key]["value"]
        for owner, key in handlers.settings_form.keys
    )
    settings = handlers.request_settings("fullqa", values)
    assert settings == {**FullQAReasoning.resolve_settings({}), **given, "top_k": 2}
    assert isinstance(settings["top_k"], int)


def test_every_owners_group_shows_under_its_name_with_values_kept_by_key() -> None:
    with gr.Blocks():
        form = build_settings_form({"My files.v2": SPECS["alpha"]}, None, "p", every_owner=True)
    assert [g.visible for g in form.groups.values()] == [True]
    assert [c.elem_id for c in form.components] == ["p-my-files-v2-k", "p-my-files-v2-on"]
    assert [c.key for c in form.components] == ["p:My files.v2:k", "p:My files.v2:on"]


def test_index_settings_reach_the_request(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    app.indices.create("Second", "ragloom_app.index.file.FileIndex")
    specs = index_specs(app, LOCAL_USER)
    assert list(specs) == ["My files", "Second"]
    assert list(specs["Second"]) == [
        "retrieval_mode",
        "definition_prior",
        "mmr",
        "mmr_lambda",
        "rerank",
    ]
    values = remember({}, "Second", "mmr_lambda", specs["Second"]["mmr_lambda"], 1)
    values = remember(values, "Second", "mmr", specs["Second"]["mmr"], True)
    values = remember(values, "Gone", "mmr", specs["Second"]["mmr"], True)
    assert values["Second"] == {"mmr_lambda": 1.0, "mmr": True}
    assert isinstance(values["Second"]["mmr_lambda"], float)
    # An index deleted since its settings were changed is forgotten, not an error.
    assert sent(app, values, LOCAL_USER) == {"Second": {"mmr_lambda": 1.0, "mmr": True}}
