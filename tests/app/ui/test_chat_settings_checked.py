"""The chat's settings are checked on the server as the HTTP API checks them.

Gradio's components let NaN through a number box (``{"data": [NaN]}`` parses, and
``nan < minimum`` is false), infinity through one without a maximum, and text of any
length through a text box. A plugin's mode with such settings, and the file index's float
setting, each given a value the API refuses: the chat refuses it in words, and neither
answers with it nor saves it; a saved value that is no longer valid reads back as the
default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from ragloom_app.accounts.preferences import ChatDefaults, ChatDefaultsStore
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.index.settings import MAX_TEXT_SETTING_CHARS
from ragloom_app.pages.chat import ChatPage
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.reasoning import ReasoningInfo
from ragloom_app.reasoning.base import SettingSpec
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.reasoning.settings import ModeSettingsError
from ragloom_app.settings import AppSettings
from ragloom_app.ui.chat_handlers import ChatHandlers
from ragloom_app.ui.index_settings import index_specs, remember
from ragloom_app.ui.settings_form import build_settings_form
from tests.helpers.markdown_shown import markdown_html, shown_text


class TunedReasoning(FullQAReasoning):
    """FullQA with the kinds of settings a plugin adds: bounded and unbounded floats, text."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(id="tuned", name="Tuned", description="FullQA, tuned.")

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        number = {"component": "number", "minimum": 0.0, "step": 0.1}
        return {
            **FullQAReasoning.get_user_settings(),
            "min_support": {**number, "name": "Support", "value": 0.5, "maximum": 1.0},
            "boost": {**number, "name": "Boost", "value": 1.0},
            "note": {"name": "Note", "value": "", "component": "text"},
        }


class TunedPlugin:
    @hookimpl
    def ragloom_reasonings(self) -> list[type]:
        return [TunedReasoning]


@pytest.fixture
def handlers(tmp_path: Path) -> ChatHandlers:
    manager = create_plugin_manager()
    manager.register(TunedPlugin(), name="tuned")
    app = BaseApp(AppSettings(data_dir=tmp_path / "data"), plugin_manager=manager).start()
    handlers = ChatHandlers(ChatPage(app))
    with gr.Blocks():
        handlers.settings_form = build_settings_form(handlers.mode_settings(), "tuned", "s")
    return handlers


def _sent(handlers: ChatHandlers, **tuned: Any) -> tuple[Any, ...]:
    """One value per component of every mode's form, as a handler gets them: the defaults
    with ``tuned``'s changes, each through gradio's own check of its component."""
    form = handlers.settings_form
    assert form is not None
    values = []
    for (owner, key), component in zip(form.keys, form.components, strict=True):
        default = form.specs[owner][key]["value"]
        raw = tuned.get(key, default) if owner == "tuned" else default
        values.append(component.preprocess(raw))
    return tuple(values)


REFUSED = [
    ({"min_support": math.nan}, "min_support must be a number, got nan"),
    ({"boost": math.inf}, "boost must be a number, got inf"),
    ({"note": "x" * (MAX_TEXT_SETTING_CHARS + 1)}, "note is 1,001 characters long"),
]


@pytest.mark.parametrize(("given", "words"), REFUSED)
def test_a_mode_setting_the_api_refuses_the_chat_refuses(
    handlers: ChatHandlers, given: dict[str, Any], words: str
) -> None:
    with pytest.raises(ModeSettingsError, match=words):
        handlers.request_settings("tuned", _sent(handlers, **given))
    settings = handlers.request_settings("tuned", _sent(handlers, min_support=0.8, note="hi"))
    assert settings["min_support"] == 0.8 and settings["note"] == "hi" and settings["top_k"] == 3


def _asked(handlers: ChatHandlers, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The settings of every question the page is asked (it answers nothing)."""
    asked: list[dict[str, Any]] = []

    def ask(question: str, **kwargs: Any) -> Iterator[Any]:
        asked.append(kwargs["settings"])
        return iter(())

    monkeypatch.setattr(handlers.page, "ask", ask)
    return asked


@pytest.mark.parametrize(("given", "words"), REFUSED)
def test_a_question_with_a_refused_setting_is_not_sent(
    handlers: ChatHandlers, monkeypatch: pytest.MonkeyPatch, given: dict[str, Any], words: str
) -> None:
    asked = _asked(handlers, monkeypatch)
    values = _sent(handlers, **given)
    with pytest.warns(UserWarning, match=f"The question was not sent: {words}"):
        (outputs,) = handlers.respond(
            "Where is the reactor?", "tuned", None, None, None, None, *values
        )
    assert all(output == gr.skip() for output in outputs)  # the question stays in its box
    assert asked == [] and handlers.store.list(LOCAL_USER) == []  # no conversation made


def test_defaults_with_a_refused_setting_are_not_saved(handlers: ChatHandlers) -> None:
    assert handlers.save_defaults("tuned", {}, None, *_sent(handlers, note="kept")) == (
        "Saved: new pages open with these settings."
    )
    with pytest.warns(UserWarning, match="not saved: Tuned: min_support must be a number"):
        status = handlers.save_defaults("tuned", {}, None, *_sent(handlers, min_support=math.nan))
    assert shown_text(status).startswith("Not saved: Tuned: min_support must be a number")
    saved = ChatDefaultsStore(handlers.page.app.engine).get(LOCAL_USER)
    assert saved.modes["tuned"]["note"] == "kept" and saved.modes["tuned"]["min_support"] == 0.5


def test_a_value_the_refusal_quotes_shows_as_written(handlers: ChatHandlers) -> None:
    """The status is Markdown; a value sent past gradio's choices is quoted as text."""
    form = handlers.settings_form
    assert form is not None
    values = list(_sent(handlers))
    hostile = "![p](https://evil.example/?q=1) <img src=x>"
    values[form.keys.index(("auto", "single_mode"))] = hostile
    with pytest.warns(UserWarning, match="single_mode must be one of"):
        status = handlers.save_defaults("tuned", {}, None, *values)
    assert hostile in shown_text(status)
    assert not re.search(r"<(a|img)\b", markdown_html(status)) and "https:" not in status


def test_saved_values_no_longer_valid_read_back_as_the_defaults(handlers: ChatHandlers) -> None:
    """Saved before the check, or made invalid since (a bound or a type changed)."""
    stale = ChatDefaults(
        mode="tuned",
        modes={"tuned": {"min_support": math.nan, "boost": 2.0, "top_k": 99, "note": 5}},
        indices={"My files": {"mmr_lambda": math.nan, "mmr": True, "rerank": "maybe"}},
    )
    ChatDefaultsStore(handlers.page.app.engine).save(LOCAL_USER, stale)
    mode, *shown, index_values = handlers.load_defaults(None)
    form = handlers.settings_form
    assert form is not None
    tuned = {
        key: value for (owner, key), value in zip(form.keys, shown, strict=True) if owner == "tuned"
    }
    assert mode["value"] == "tuned"
    assert tuned == {**TunedReasoning.resolve_settings({}), "boost": 2.0}
    assert index_values == {"My files": {"mmr": True}}


@pytest.mark.parametrize("value", [math.nan, math.inf, 1.5])
def test_an_index_setting_the_server_refuses_is_not_remembered(
    handlers: ChatHandlers, value: float
) -> None:
    spec = index_specs(handlers.page.app, LOCAL_USER)["My files"]["mmr_lambda"]
    kept = {"My files": {"mmr": True}}
    with pytest.warns(UserWarning, match="not kept: index .*My files.*: mmr_lambda must be"):
        assert remember(kept, "My files", "mmr_lambda", spec, value) == kept
    assert remember(kept, "My files", "mmr_lambda", spec, 1) == {
        "My files": {"mmr": True, "mmr_lambda": 1.0}
    }


def test_settings_that_fail_unexpectedly_leave_the_open_conversation_shown(
    handlers: ChatHandlers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings are read before anything is stored; a failure there (a plugin's bug)
    shows its apology under the open conversation's turns, not in an emptied chat."""
    conversation = handlers.store.create(owner=LOCAL_USER)
    handlers.store.add_message(conversation, "user", "How hot is the reactor?")
    handlers.store.add_message(conversation, "assistant", "451 kelvin [1].")

    def broken(*args: Any) -> dict[str, Any]:
        raise KeyError("a plugin's bug")

    monkeypatch.setattr(handlers, "request_settings", broken)
    with pytest.warns(UserWarning, match="Answering failed"):
        (outputs,) = handlers.respond(
            "And the coolant?", "tuned", conversation, None, None, None, *_sent(handlers)
        )
    chat = outputs[0]
    assert [turn["role"] for turn in chat] == ["user", "assistant", "user", "assistant"]
    assert "451 kelvin" in str(chat[1]["content"]) and "coolant" in str(chat[2]["content"])
    assert len(handlers.store.messages(conversation)) == 2  # nothing of it stored
