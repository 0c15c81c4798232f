"""One test per hook (``test_hook_<name>``, as test_hook_guards.py requires), and how
hooks are called: with the arguments they name, optional hooks, PLUGIN_SETTINGS.

Plugins here are registered on a PluginManager given to BaseApp, so nothing depends on
what is installed.
"""

from __future__ import annotations

import json
import logging
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.cli_transfer import _embedding_identity
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings, SettingsError
from ragloom_app.testing import HashEmbeddings, ReplayLLM, check_plugin
from tests.app.plugins.test_plugin_registration import (
    HASH_EMBEDDINGS,
    EchoReasoning,
    LogReader,
    NoteIndex,
    ShoutTool,
)
from tests.helpers.dist_info import write_dist_info


def _start(tmp_path: Path, plugin: object, name: str = "p", **settings: Any) -> BaseApp:
    manager = create_plugin_manager()
    manager.register(plugin, name=name)
    values = AppSettings(
        data_dir=tmp_path / "data", embeddings=HASH_EMBEDDINGS, default_embedding="hash"
    )
    for key, value in settings.items():
        setattr(values, key, value)
    return BaseApp(values, plugin_manager=manager).start()


class Seen:
    """Records the app each hook was called with."""

    def __init__(self) -> None:
        self.apps: list[object] = []


def test_hook_ragloom_reasonings_gets_the_app_when_it_names_it(tmp_path: Path) -> None:
    seen = Seen()

    class Plugin:
        @hookimpl
        def ragloom_reasonings(self, app: BaseApp) -> list[type]:
            seen.apps.append(app)
            return [EchoReasoning]

    app = _start(tmp_path, Plugin())
    assert seen.apps == [app]
    assert app.reasonings["echo"] is EchoReasoning
    assert app.registry.owner("reasonings", "echo") == "plugin p"


def test_hook_ragloom_index_types_as_a_list_or_by_type_id(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def ragloom_index_types(self) -> dict[str, type]:
            return {"notes.NoteIndex": NoteIndex}

    app = _start(tmp_path, Plugin())
    assert app.indices.index_types["notes.NoteIndex"] is NoteIndex
    listed = check_plugin(type("L", (), {"ragloom_index_types": hookimpl(lambda: [NoteIndex])}))
    assert listed.info.registered["index_types"] == [f"{NoteIndex.__module__}.NoteIndex"]
    wrong = type("W", (), {"ragloom_index_types": hookimpl(lambda: {"": NoteIndex})})
    with pytest.raises(AssertionError, match="a type id must be text of 1 to 200 characters"):
        check_plugin(wrong)


def test_hook_ragloom_tools_reaches_the_agents_registry(tmp_path: Path) -> None:
    plugin = type("Plugin", (), {"ragloom_tools": staticmethod(hookimpl(lambda: [ShoutTool]))})
    app = _start(tmp_path, plugin)
    assert app.tools.get("shout") is ShoutTool
    assert app.tools_by_name()["shout"] is ShoutTool


def test_hook_ragloom_file_readers_reads_its_plugin_settings(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def ragloom_file_readers(self, app: BaseApp) -> dict[str, Any]:
            own = app.plugin_settings("ragloom-logs")
            return {own.get("extension", ".log"): LogReader()}

    app = _start(tmp_path, Plugin(), plugin_settings={"Ragloom_Logs": {"extension": ".journal"}})
    assert isinstance(app.readers[".journal"], LogReader) and ".log" not in app.readers
    assert app.plugin_settings("RAGLOOM.logs") == {"extension": ".journal"}
    assert app.plugin_settings("ragloom-other") == {}


def test_hook_ragloom_llms_a_class_is_a_spec(tmp_path: Path) -> None:
    plugin = type("Plugin", (), {"ragloom_llms": staticmethod(hookimpl(lambda: {"r": ReplayLLM}))})
    app = _start(tmp_path, plugin)
    assert app.llm_specs["r"] == {"class": ReplayLLM}
    assert isinstance(app.llm("r"), ReplayLLM)


def test_hook_ragloom_embeddings_without_arguments_still_works(tmp_path: Path) -> None:
    # A plugin written before hooks had an ``app`` argument.
    plugin = type(
        "Old", (), {"ragloom_embeddings": staticmethod(hookimpl(lambda: {"h": HashEmbeddings}))}
    )
    app = _start(tmp_path, plugin, default_embedding="h")
    assert isinstance(app.embeddings(), HashEmbeddings)


def test_an_index_embedded_by_a_plugins_model_names_it_in_its_export(tmp_path: Path) -> None:
    """``ragloom index export`` and ``import`` read the model of the app's tables, which
    hold the plugins' models too (they read the settings' only, and failed on these)."""
    plugin = type(
        "Plugin", (), {"ragloom_embeddings": staticmethod(hookimpl(lambda: {"h": HashEmbeddings}))}
    )
    app = _start(tmp_path, plugin, default_embedding="h")
    identity = _embedding_identity(app)
    assert identity["class"] == f"{HashEmbeddings.__module__}.HashEmbeddings"
    assert identity["dimension"] == app.embeddings().dimension


def test_an_optional_hook_ragloom_lacks_is_ignored_and_the_plugin_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Newer:
        @hookimpl(optionalhook=True)
        def ragloom_hook_of_a_newer_ragloom(self) -> list[str]:
            raise AssertionError("never called")

        @hookimpl
        def ragloom_tools(self) -> list[type]:
            return [ShoutTool]

    with caplog.at_level(logging.ERROR):
        app = _start(tmp_path, Newer())
    (info,) = app.plugins
    assert info.error is None and info.registered["tools"] == ["shout"]
    assert "left out" not in caplog.text


def test_ragloom_itself_is_listed_as_a_plugin_that_registered_the_settings(
    tmp_path: Path,
) -> None:
    app = _start(tmp_path, type("Empty", (), {}))
    (builtin,) = app.builtin_plugins
    assert builtin is app.builtin_info() and builtin.name == "ragloom (built-in)"
    assert builtin.registered["reasonings"] == ["fullqa", "decompose", "react", "rewoo", "auto"]
    assert builtin.registered["index_types"] == ["ragloom_app.index.file.FileIndex"]
    assert builtin.registered["embeddings"] == ["hash"]
    assert app.registry.owner("tools", "calculator") == "the built-in tools"
    assert [p.name for p in app.plugins] == ["p"]


def test_a_settings_llm_without_a_class_stops_startup_naming_llms(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^LLMS: .*'broken'.* 'class' key"):
        _start(tmp_path, type("Empty", (), {}), llms={"broken": {"model": "x"}})


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("plugin_settings", ["ragloom-x"], "must be a dict of plugin"),
        ("plugin_settings", {"ragloom-x": "fast"}, "must be a dict of plugin"),
        ("plugin_settings", {"Ragloom_X": {}, "ragloom-x": {}}, "'ragloom-x' is given twice"),
        (
            "plugin_settings",
            {f"p{n}": {} for n in range(201)},
            "at most 200 (MAX_PLUGIN_SETTINGS)",
        ),
        ("disabled_plugins", None, "must be a list of plugin (distribution) names, not None"),
        ("disabled_plugins", [None], "must be a list of plugin (distribution) names, not [None]"),
        ("disabled_plugins", ["ok", " "], "must be a list of plugin (distribution) names"),
        ("disabled_plugins", [f"p{n}" for n in range(201)], "201 names; at most 200"),
    ],
)
def test_malformed_plugin_settings_are_refused_naming_the_setting(
    setting: str, value: object, message: str
) -> None:
    with pytest.raises(SettingsError, match=rf"^{setting.upper()}: ") as raised:
        AppSettings(**{setting: value})
    assert message in str(raised.value)


def test_disabled_plugins_of_none_is_told_not_a_crash_of_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragloom_app import cli

    settings = tmp_path / "flowsettings.py"
    settings.write_text(f"DATA_DIR = {str(tmp_path / 'data')!r}\nDISABLED_PLUGINS = None\n")
    assert cli.main(["--settings", str(settings), "plugins"]) == 2  # TypeError before
    assert "DISABLED_PLUGINS: must be a list of plugin" in capsys.readouterr().err


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[str, object], None]:
    """Pretend-install a distribution whose plugin module is ``plugin``."""

    def install(name: str, plugin: object) -> None:
        module = types.ModuleType(f"{name.replace('-', '_')}_module")
        for attr in ("ragloom_commands", "ragloom_tools", "ragloom_reasonings"):
            if hasattr(plugin, attr):
                setattr(module, attr, getattr(plugin, attr))
        monkeypatch.setitem(sys.modules, module.__name__, module)
        write_dist_info(tmp_path / name, name, "1.0", {name: module.__name__})
        monkeypatch.syspath_prepend(str(tmp_path / name))

    monkeypatch.setenv(
        "RAGLOOM_SETTINGS", str(Path(__file__).resolve().parents[3] / "flowsettings.py")
    )
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "data"))
    return install


class Greeter:
    @staticmethod
    @hookimpl
    def ragloom_commands(cli: click.Group) -> list[click.Command]:
        @cli.command(help="greet NAME")
        @click.argument("name")
        def hello(name: str) -> int:
            click.echo(f"Hello, {name}!")
            return 3

        @click.command(name="modes", help="the plugin's modes listing")
        def modes() -> None:
            click.echo("no modes here")

        return [modes]


def test_hook_ragloom_commands_adds_subcommands_and_may_replace_one(
    installed: Callable[[str, object], None],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ragloom_app import cli

    installed("ragloom-greeter", Greeter)
    with caplog.at_level(logging.WARNING):
        assert cli.main(["hello", "Ada"]) == 3
    assert capsys.readouterr().out == "Hello, Ada!\n"
    assert (
        "command 'modes' is registered by the built-in commands and again by plugin "
        "ragloom-greeter: the later one (plugin ragloom-greeter) wins"
    ) in caplog.text
    assert cli.main(["--help"]) == 0
    assert "  hello " in capsys.readouterr().out
    assert cli.main(["modes"]) == 0
    assert capsys.readouterr().out == "no modes here\n"
    assert "hello" not in cli.cli.commands  # the built-in group is left as it was


def test_a_plugin_whose_commands_hook_fails_adds_no_command(
    installed: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    from ragloom_app import cli

    broken = type("Broken", (), {"ragloom_commands": staticmethod(hookimpl(lambda: "hello"))})
    installed("ragloom-broken-commands", broken)
    assert cli.main(["hello"]) == 2
    assert "No such command 'hello'" in capsys.readouterr().err
    assert cli.main(["plugins", "--json"]) == 0  # the rest of the command line works
    (record,) = json.loads(capsys.readouterr().out)
    assert record["warnings"] == [
        "its commands are left out: ragloom_commands must return a list of click commands, got str"
    ]


def test_the_commands_of_a_plugin_whose_other_hooks_fail_are_left_out(
    installed: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """A plugin is left out whole: its commands ran although `ragloom plugins` said it
    had failed."""
    from ragloom_app import cli

    def fails() -> list[type]:
        raise RuntimeError("the plugin's bug")

    half = type("Half", (), {"ragloom_reasonings": staticmethod(hookimpl(fails))})
    half.ragloom_commands = Greeter.ragloom_commands  # type: ignore[attr-defined]
    installed("ragloom-half", half)
    assert cli.main(["hello", "Ada"]) == 2
    assert "No such command 'hello'" in capsys.readouterr().err
    assert cli.main(["plugins", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["error"] == "ragloom_reasonings raised RuntimeError: the plugin's bug"
    # Why its commands are gone is on its record too: as the command line is read, the
    # app is not started, and a hook might fail there alone.
    assert record["warnings"] == [
        "its commands are left out: its hooks failed as the command line was read "
        "(ragloom_reasonings raised RuntimeError: the plugin's bug)"
    ]


def test_a_command_a_plugin_replaces_is_listed_in_its_record(
    installed: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    from ragloom_app import cli

    installed("ragloom-greeter", Greeter)
    assert cli.main(["plugins", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["warnings"] == [
        "command 'modes' is registered by the built-in commands and again by plugin "
        "ragloom-greeter: the later one (plugin ragloom-greeter) wins"
    ]
    assert cli.main(["plugins"]) == 0
    assert "  warning: command 'modes' is registered by" in capsys.readouterr().out
