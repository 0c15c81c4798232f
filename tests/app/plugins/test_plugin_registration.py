"""Plugins registered with the app: everything they add reaches the app, failures stay out.

In-test plugin objects are registered on a PluginManager given to BaseApp, so nothing
here depends on what is installed.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.tools import BaseTool, ToolResult
from ragloom.schema import Page
from ragloom_app.app import BaseApp
from ragloom_app.index.base import BaseIndex
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.reasoning.base import ReasoningInfo
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from ragloom_app.testing import HashEmbeddings, ReplayLLM

HASH_EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}


class EchoReasoning(FullQAReasoning):
    @classmethod
    def get_info(cls):  # type: ignore[no-untyped-def]
        from ragloom_app.reasoning import ReasoningInfo

        return ReasoningInfo(id="echo", name="Echo", description="FullQA under another id.")


class ShoutTool(BaseTool):
    name: ClassVar[str] = "shout"
    description: ClassVar[str] = "Upper-cases the text."

    class Arguments(BaseModel):
        text: str

    def run(self, arguments: BaseModel) -> ToolResult:
        return ToolResult(content=arguments.text.upper())  # type: ignore[attr-defined]


class LogReader:
    extensions: tuple[str, ...] = (".log",)

    def read(self, path: Path) -> list[Page]:
        return [Page(text=path.read_text().replace("INFO ", ""))]


class NoteIndex(BaseIndex):
    """An index type that holds nothing (only its registration matters here)."""


class GoodPlugin:
    @hookimpl
    def ragloom_reasonings(self) -> list[type]:
        return [EchoReasoning]

    @hookimpl
    def ragloom_tools(self) -> list[type]:
        return [ShoutTool]

    @hookimpl
    def ragloom_file_readers(self) -> dict[str, Any]:
        return {".log": LogReader()}

    @hookimpl
    def ragloom_index_types(self) -> list[type]:
        return [NoteIndex]

    @hookimpl
    def ragloom_llms(self) -> dict[str, Any]:
        return {"replay": {"class": ReplayLLM, "replies": ["Replayed [1]."]}}

    @hookimpl
    def ragloom_embeddings(self) -> dict[str, Any]:
        return {"hashed": HashEmbeddings}


class RaisingPlugin:
    """Its tool hook is fine, its reasoning hook raises: none of it may be registered."""

    @hookimpl
    def ragloom_tools(self) -> list[type]:
        return [ShoutTool]

    @hookimpl
    def ragloom_reasonings(self) -> list[type]:
        raise RuntimeError("the plugin's bug")


def _app(tmp_path: Path, *plugins: tuple[str, object], **settings: Any) -> BaseApp:
    manager = create_plugin_manager()
    for name, plugin in plugins:
        manager.register(plugin, name=name)
    values = AppSettings(data_dir=tmp_path / "data", embeddings=HASH_EMBEDDINGS)
    values.default_embedding = "hash"
    for key, value in settings.items():
        setattr(values, key, value)
    return BaseApp(values, plugin_manager=manager).start()


def test_what_a_plugin_adds_reaches_every_registry(tmp_path: Path) -> None:
    app = _app(tmp_path, ("good", GoodPlugin()))
    assert list(app.reasonings)[-1] == "echo"
    assert app.tools.names() == ["docsearch", "calculator", "llm", "shout"]
    assert isinstance(app.readers[".log"], LogReader) and ".pdf" in app.readers
    type_id = f"{NoteIndex.__module__}.NoteIndex"
    assert app.indices.index_types[type_id] is NoteIndex
    assert isinstance(app.llm("replay"), ReplayLLM)
    (info,) = app.plugins
    assert info.to_dict() == {
        "name": "good",
        "version": None,
        "entry_point": None,
        "registered": {
            "reasonings": ["echo"],
            "index_types": [type_id],
            "tools": ["shout"],
            "readers": [".log"],
            "llms": ["replay"],
            "embeddings": ["hashed"],
        },
        "error": None,
        "disabled": False,
        "warnings": [],
    }
    assert app.describe()["plugins"] == [info.to_dict()]
    assert "echo" not in app.builtin_info().registered["reasonings"]


def test_a_plugin_llm_can_be_the_default(tmp_path: Path) -> None:
    app = _app(tmp_path, ("good", GoodPlugin()), default_llm="replay", default_reasoning="echo")
    assert app.reasoning_state().llm.replies == ["Replayed [1]."]


def test_a_plugin_whose_hook_raises_is_listed_with_its_error_and_adds_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        app = _app(tmp_path, ("raising", RaisingPlugin()), ("good", GoodPlugin()))
    raising, good = app.plugins
    assert raising.error == "ragloom_reasonings raised RuntimeError: the plugin's bug"
    assert raising.registered["tools"] == []
    assert good.error is None and "echo" in app.reasonings
    assert app.tools.names().count("shout") == 1  # from the good plugin only
    assert "plugin raising left out: ragloom_reasonings raised RuntimeError" in caplog.text


@pytest.mark.parametrize(
    ("hook", "value", "message"),
    [
        ("ragloom_reasonings", [ShoutTool], "not a BaseReasoning subclass"),
        ("ragloom_reasonings", EchoReasoning, "must return a list"),
        ("ragloom_tools", ["shout"], "not a BaseTool subclass"),
        ("ragloom_file_readers", {"log": LogReader()}, "is not a lower-case '.ext'"),
        ("ragloom_file_readers", {".log": LogReader}, "is not a FileReader object"),
        ("ragloom_llms", {"x": {"model": "y"}}, "must be a class or a dict with a 'class' key"),
        # Bounded (docs/security.md, "Plugins"). Read whole, an endless iterator held up
        # the start for ever:
        ("ragloom_tools", itertools.repeat(ShoutTool), "must return a list of BaseTool"),
        # A set registers in another order each run.
        ("ragloom_reasonings", {EchoReasoning}, "must return a list of BaseReasoning"),
        ("ragloom_tools", [ShoutTool] * 501, "returned 501 entries; at most 500"),
        (
            "ragloom_llms",
            {f"m{n}": ReplayLLM for n in range(501)},
            "returned 501 entries; at most 500 (MAX_HOOK_ENTRIES)",
        ),
        ("ragloom_embeddings", {"e" * 201: HashEmbeddings}, "a name must be text of 1 to 200"),
        ("ragloom_index_types", {"i" * 201: NoteIndex}, "a type id must be text of 1 to 200"),
        ("ragloom_file_readers", {"." + "x" * 31: LogReader()}, "is not a lower-case '.ext'"),
    ],
)
def test_a_hook_returning_the_wrong_kind_of_thing_is_refused(
    tmp_path: Path, hook: str, value: object, message: str
) -> None:
    plugin = type("Wrong", (), {hook: staticmethod(hookimpl(lambda: value))})
    app = _app(tmp_path, ("wrong", plugin))
    (info,) = app.plugins
    assert info.error is not None and message in info.error


def test_a_misspelt_hook_is_reported(tmp_path: Path) -> None:
    plugin = type("Typo", (), {"ragloom_reasoning": staticmethod(hookimpl(lambda: []))})
    (info,) = _app(tmp_path, ("typo", plugin)).plugins
    assert info.error is not None and info.error.startswith("unknown hook ragloom_reasoning")


def test_a_disabled_plugin_is_listed_and_adds_nothing(tmp_path: Path) -> None:
    app = _app(tmp_path, ("good", GoodPlugin()), disabled_plugins=["Good"])
    (info,) = app.plugins
    assert info.disabled and info.error is None
    assert "echo" not in app.reasonings and "shout" not in app.tools.names()
    assert ".log" not in app.readers


def test_disabled_plugins_come_from_the_environment_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGLOOM_DISABLED_PLUGINS", " ragloom-plugin-example, other ,")
    settings = AppSettings.load(Path(__file__).resolve().parents[3] / "flowsettings.py")
    assert settings.disabled_plugins == ["ragloom-plugin-example", "other"]


class FullQAAgain:
    """Registers a mode under FullQA's id, a tool under docsearch's and a .md reader."""

    @hookimpl
    def ragloom_reasonings(self) -> list[type]:
        return [type("MyFullQA", (FullQAReasoning,), {})]

    @hookimpl
    def ragloom_file_readers(self) -> dict[str, Any]:
        return {".md": LogReader()}


def test_a_shared_id_is_won_by_the_later_registration_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        app = _app(tmp_path, ("again", FullQAAgain()))
    assert app.reasonings["fullqa"].__name__ == "MyFullQA"
    assert isinstance(app.readers[".md"], LogReader)
    (info,) = app.plugins
    assert info.warnings == [
        "reasoning 'fullqa' is registered by REASONINGS and again by plugin again: "
        "the later one (plugin again) wins",
        "reader '.md' is registered by the built-in readers and again by plugin again: "
        "the later one (plugin again) wins",
    ]
    assert info.warnings[0] in caplog.text


class OtherShout(ShoutTool):
    """Another plugin's tool under the same name."""


class RequestShout(ShoutTool):
    """Needs the request, yet says it runs in the sandbox (as every tool does by default)."""

    @classmethod
    def from_context(cls, context: Any) -> RequestShout:
        return cls()


def test_a_sandboxed_tool_that_needs_the_request_leaves_its_plugin_out(tmp_path: Path) -> None:
    plugin = type("Needy", (), {"ragloom_tools": staticmethod(hookimpl(lambda: [RequestShout]))})
    app = _app(tmp_path, ("needy", plugin), ("good", GoodPlugin()))
    needy, good = app.plugins
    assert needy.error is not None
    assert "RequestShout overrides from_context()" in needy.error
    assert "set `sandboxed = False` on it" in needy.error
    assert good.error is None and app.tools.get("shout") is ShoutTool


def test_two_plugins_with_one_tool_name_the_later_wins(tmp_path: Path) -> None:
    other = type("Other", (), {"ragloom_tools": staticmethod(hookimpl(lambda: [OtherShout]))})
    app = _app(tmp_path, ("good", GoodPlugin()), ("other", other))
    assert app.tools.get("shout") is OtherShout
    assert app.plugins[1].warnings == [
        "tool 'shout' is registered by plugin good and again by plugin other: "
        "the later one (plugin other) wins"
    ]


class WebSearch(ShoutTool):
    name: ClassVar[str] = "WebSearch"


def test_a_tool_whose_name_agents_cannot_write_leaves_its_plugin_out(tmp_path: Path) -> None:
    plugin = type("Camel", (), {"ragloom_tools": staticmethod(hookimpl(lambda: [WebSearch]))})
    app = _app(tmp_path, ("camel", plugin))  # the agents' registry raised ValueError here
    (camel,) = app.plugins
    assert camel.error == (
        "WebSearch.name must be a lower-case identifier (agents write it in their plans), "
        "not 'WebSearch'"
    )
    assert app.tools.names() == ["docsearch", "calculator", "llm"]


def _mode(mode_id: object, name: object = "Mode", description: object = "A mode.") -> type:
    info = ReasoningInfo(id=mode_id, name=name, description=description)  # type: ignore[arg-type]
    return type("Odd", (FullQAReasoning,), {"get_info": classmethod(lambda cls: info)})


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (_mode(5), "the id 5 must be 1 to 40 lower-case letters"),
        (_mode("FULLQA"), "the id 'FULLQA' must be"),
        (_mode(" fullqa"), "the id ' fullqa' must be"),
        (_mode("Full QA"), "the id 'Full QA' must be"),
        (_mode("x" * 41), "must be 1 to 40"),
        (_mode("odd", name=None), "get_info() needs a name: text of 1 to 80 characters"),
        (_mode("odd", description="d" * 1001), "needs a description: text of 1 to 1000"),
    ],
)
def test_a_mode_whose_id_name_or_description_breaks_the_rule_is_left_out(
    tmp_path: Path, mode: type, message: str
) -> None:
    plugin = type("Modes", (), {"ragloom_reasonings": staticmethod(hookimpl(lambda: [mode]))})
    app = _app(tmp_path, ("modes", plugin))  # id 5 raised TypeError at start before
    (info,) = app.plugins
    assert info.error is not None and info.error.startswith("Odd: ")
    assert message in info.error
    assert list(app.reasonings) == ["fullqa", "decompose", "react", "rewoo", "auto"]
