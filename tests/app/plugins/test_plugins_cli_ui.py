"""`ragloom plugins` and the Plugins tab show each plugin, what it added and its error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragloom_app import cli
from ragloom_app.app import BaseApp
from ragloom_app.index.base import BaseIndex
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.reasoning.base import ReasoningInfo
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from ragloom_app.ui import render
from tests.helpers.dist_info import write_dist_info

PROJECT = Path(__file__).resolve().parents[3]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGLOOM_SETTINGS", str(PROJECT / "flowsettings.py"))
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "data"))
    # An installed distribution whose plugin module cannot be imported.
    write_dist_info(tmp_path / "site", "ragloom-broken", "0.3.0", {"broken": "ragloom_no_such_mod"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_plugins_json_lists_the_broken_plugin_with_its_error(
    env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plugins", "--json"]) == 0
    (plugin,) = json.loads(capsys.readouterr().out)
    assert plugin["name"] == "ragloom-broken" and plugin["version"] == "0.3.0"
    assert plugin["error"] == "ModuleNotFoundError: No module named 'ragloom_no_such_mod'"
    assert plugin["registered"]["reasonings"] == []


def test_plugins_all_lists_the_builtins_first(
    env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plugins", "--json", "--all"]) == 0
    builtin, broken = json.loads(capsys.readouterr().out)
    assert builtin["name"] == "ragloom (built-in)"
    assert builtin["registered"]["reasonings"][0] == "fullqa"
    assert ".pdf" in builtin["registered"]["readers"]
    assert builtin["registered"]["tools"] == ["docsearch", "calculator", "llm"]
    assert broken["name"] == "ragloom-broken"


def test_plugins_text_says_what_failed(env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugins"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ragloom-broken 0.3.0",
        "  error: ModuleNotFoundError: No module named 'ragloom_no_such_mod'",
    ]


def test_the_app_still_answers_questions_about_its_modes(
    env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["modes"]) == 0
    assert capsys.readouterr().out.startswith("fullqa")


def test_plugins_html_shows_status_registrations_and_escapes() -> None:
    html = render.plugins_html(
        [
            {
                "name": "ragloom-<b>x",
                "version": "1.0",
                "registered": {"reasonings": ["verified"], "tools": [], "readers": [".rst"]},
                "error": None,
                "warnings": ["reasoning 'fullqa' is registered by REASONINGS and again by x"],
            },
            {"name": "broken", "version": "0.1", "registered": {}, "error": "ImportError: no"},
            {"name": "off", "registered": {}, "disabled": True},
        ],
        {"Notes": "its type x.Y is not registered"},
    )
    assert "ragloom-&lt;b&gt;x" in html and "<b>x" not in html
    assert "reasonings: verified<br>readers: .rst" in html
    assert 'rl-badge rl-loaded">loaded' in html and 'rl-failed">failed' in html
    assert 'rl-disabled">disabled' in html and "ImportError: no" in html
    assert "Notes: its type x.Y is not registered" in html
    assert "No plugins installed." in render.plugins_html([])


def test_the_page_has_a_plugins_tab_and_the_plugin_mode(tmp_path: Path) -> None:
    import gradio as gr

    from ragloom_app.reasoning.base import ReasoningInfo
    from ragloom_app.reasoning.fullqa import FullQAReasoning
    from ragloom_app.ui.layout import build_ui
    from ragloom_app.ui.plugins_tab import plugins_page_html

    class Tidy(FullQAReasoning):
        @classmethod
        def get_info(cls) -> ReasoningInfo:
            return ReasoningInfo("tidy", "Tidy answer", "FullQA, tidied.")

        @classmethod
        def get_user_settings(cls) -> dict:
            return {"neat": {"name": "Neatness", "value": 2, "component": "number"}}

    manager = create_plugin_manager()
    plugin = type("P", (), {"ragloom_reasonings": staticmethod(hookimpl(lambda: [Tidy]))})
    manager.register(plugin, name="ragloom-tidy")
    app = BaseApp(AppSettings(data_dir=tmp_path / "data"), plugin_manager=manager).start()
    demo = build_ui(app)
    by_id = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    shown = plugins_page_html(app)  # what the plugin table shows when the page loads
    assert "ragloom-tidy" in shown and "reasonings: tidy" in shown
    assert ("Tidy answer", "tidy") in by_id["mode-selector"].choices
    assert isinstance(by_id["setting-tidy-neat"], gr.Number)  # its settings in the sidebar
    assert isinstance(by_id["tab-plugins"], gr.Tab)


class Sloppy(FullQAReasoning):
    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("sloppy", "Sloppy", "Settings without specs.")

    @classmethod
    def get_user_settings(cls) -> dict[str, Any]:
        return {"top_k": 5}


class Fragile(BaseIndex):
    @classmethod
    def get_admin_settings(cls) -> dict[str, Any]:
        raise RuntimeError("no config file")


def test_a_mode_or_index_type_whose_settings_the_ui_cannot_draw_is_left_out(
    tmp_path: Path,
) -> None:
    """The forms are drawn from the settings at build_ui: a broken one would stop the
    page (and GET /modes) for everyone, so the plugin is refused at registration."""
    from ragloom_app.ui.layout import build_ui

    manager = create_plugin_manager()
    mode = type("M", (), {"ragloom_reasonings": staticmethod(hookimpl(lambda: [Sloppy]))})
    index = type("I", (), {"ragloom_index_types": staticmethod(hookimpl(lambda: [Fragile]))})
    manager.register(mode, name="ragloom-sloppy")
    manager.register(index, name="ragloom-fragile")
    app = BaseApp(AppSettings(data_dir=tmp_path / "data"), plugin_manager=manager).start()
    sloppy, fragile = app.plugins
    assert sloppy.error == "Sloppy.get_user_settings()['top_k']: must be a dict, got int"
    assert fragile.error == "Fragile.get_admin_settings() raised RuntimeError: no config file"
    assert "sloppy" not in app.reasonings
    assert not any(cls is Fragile for cls in app.indices.index_types.values())
    build_ui(app)  # raised AttributeError ('int' object has no attribute 'get') before
