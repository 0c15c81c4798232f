"""Plugins found through entry points: one broken distribution never stops the others.

Distributions are dist-info folders written by hand on sys.path here;
tests/e2e/test_plugins_pip.py installs real packages with pip.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import (
    collect_plugins,
    create_plugin_manager,
    load_entry_point_plugins,
)
from ragloom_app.reasoning.base import ReasoningInfo
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from tests.helpers.dist_info import write_dist_info


class TidyReasoning(FullQAReasoning):
    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(id="tidy", name="Tidy", description="FullQA, tidied.")


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., None]:
    """Pretend-install distributions; a module ``tidy_plugin`` that one points at."""
    module = types.ModuleType("tidy_plugin")
    module.ragloom_reasonings = hookimpl(lambda: [TidyReasoning])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tidy_plugin", module)
    count = iter(range(100))

    def install(name: str, version: str, entry_points: dict[str, str]) -> None:
        folder = tmp_path / f"site-{next(count)}"
        write_dist_info(folder, name, version, entry_points)
        monkeypatch.syspath_prepend(str(folder))

    return install


def test_a_plugin_that_fails_to_import_is_recorded_and_the_rest_load(
    install: Callable[..., None],
) -> None:
    install("ragloom-tidy", "1.2.0", {"tidy": "tidy_plugin"})
    install("ragloom-broken", "0.0.1", {"broken": "ragloom_no_such_module_x"})
    manager = create_plugin_manager()
    infos = load_entry_point_plugins(manager)
    assert [(i.name, i.version, i.entry_point) for i in infos] == [
        ("ragloom-broken", "0.0.1", "broken = ragloom_no_such_module_x"),
        ("ragloom-tidy", "1.2.0", "tidy = tidy_plugin"),
    ]
    assert infos[0].error == "ModuleNotFoundError: No module named 'ragloom_no_such_module_x'"
    assert manager.has_plugin("tidy") and not manager.has_plugin("broken")
    broken, tidy = collect_plugins(manager, infos)
    assert broken.info.error is not None and broken.contributions.reasonings == []
    assert tidy.info.registered["reasonings"] == ["tidy"]


def test_the_app_starts_without_the_broken_plugin(
    install: Callable[..., None], tmp_path: Path
) -> None:
    install("ragloom-broken", "0.0.1", {"broken": "ragloom_no_such_module_x"})
    install("ragloom-tidy", "1.2.0", {"tidy": "tidy_plugin"})
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    assert "tidy" in app.reasonings
    assert [(p.name, p.error is not None) for p in app.plugins] == [
        ("ragloom-broken", True),
        ("ragloom-tidy", False),
    ]


def test_a_disabled_plugin_is_not_even_imported(
    install: Callable[..., None], tmp_path: Path
) -> None:
    install("ragloom-broken", "0.0.1", {"broken": "no_such_x"})
    settings = AppSettings(data_dir=tmp_path / "data", disabled_plugins=["ragloom_broken"])
    (info,) = BaseApp(settings).start().plugins
    assert info.disabled and info.error is None


def test_a_distribution_seen_twice_on_the_path_loads_once(
    install: Callable[..., None],
) -> None:
    install("ragloom-tidy", "1.2.0", {"tidy": "tidy_plugin"})
    install("ragloom-tidy", "1.1.0", {"tidy": "tidy_plugin"})  # earlier on sys.path
    (info,) = load_entry_point_plugins(create_plugin_manager())
    assert info.version == "1.1.0" and info.error is None


def test_an_index_whose_plugin_is_gone_is_left_out_not_fatal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ragloom_app.index.base import BaseIndex

    class GoneIndex(BaseIndex):
        pass

    module = types.ModuleType("gone_plugin")
    module.ragloom_index_types = hookimpl(lambda: [GoneIndex])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gone_plugin", module)
    site = tmp_path / "site"
    write_dist_info(site, "ragloom-gone", "1.0", {"gone": "gone_plugin"})
    monkeypatch.syspath_prepend(str(site))
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    type_id = f"{GoneIndex.__module__}.{GoneIndex.__qualname__}"
    app.indices.create("Notes", type_id)
    sys.path.remove(str(site))  # uninstalled
    again = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    assert [i.name for i in again.indices.indices] == ["My files"]
    assert again.indices.unavailable == {"Notes": f"its type {type_id} is not registered"}
    with pytest.raises(ValueError, match="is taken already"):
        again.indices.create("Notes", "ragloom_app.index.file.FileIndex")


def test_a_plugin_under_the_builtin_plugins_name_is_refused_and_the_builtins_stay(
    install: Callable[..., None], tmp_path: Path
) -> None:
    install("ragloom-usurper", "1.0", {"ragloom_app.plugins.builtin": "tidy_plugin"})
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    (usurper,) = app.plugins
    assert usurper.error == (
        "the entry-point name 'ragloom_app.plugins.builtin' is Ragloom's own plugin's"
    )
    # Before, its module was asked as the built-in plugin: tidy the only mode, no start.
    assert list(app.reasonings) == ["fullqa", "decompose", "react", "rewoo", "auto"]
    assert app.builtin_info().registered["tools"] == ["docsearch", "calculator", "llm"]


def test_the_builtins_are_asked_from_their_module_whatever_holds_the_name() -> None:
    from ragloom_app.plugins import builtin
    from ragloom_app.plugins.manager import collect_default_plugins

    usurper = type("U", (), {"ragloom_reasonings": staticmethod(hookimpl(lambda: [TidyReasoning]))})
    manager = create_plugin_manager()
    manager.register(usurper, name="ragloom_app.plugins.builtin")
    app = types.SimpleNamespace(settings=AppSettings())
    (loaded,) = collect_default_plugins(manager, {"app": app}, "ragloom (built-in)", None)
    assert manager.get_plugin("ragloom_app.plugins.builtin") is builtin
    assert loaded.info.registered["reasonings"][0] == "fullqa"  # not the usurper's "tidy"
    assert loaded.info.registered["tools"] == ["docsearch", "calculator", "llm"]


def test_a_plugin_that_exits_when_imported_or_in_a_hook_is_left_out(
    install: Callable[..., None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """sys.exit() in a plugin ended every ragloom command; now it is the plugin's error."""
    (tmp_path / "exiting_plugin.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    quitter = types.ModuleType("quitting_plugin")
    quitter.ragloom_tools = hookimpl(lambda: sys.exit("bye"))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "quitting_plugin", quitter)
    install("ragloom-exiting", "1.0", {"exiting": "exiting_plugin"})
    install("ragloom-quitting", "1.0", {"quitting": "quitting_plugin"})
    install("ragloom-tidy", "1.2.0", {"tidy": "tidy_plugin"})
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    assert [(p.name, p.error) for p in app.plugins] == [
        ("ragloom-exiting", "SystemExit: 3"),
        ("ragloom-quitting", "ragloom_tools raised SystemExit: bye"),
        ("ragloom-tidy", None),
    ]
    assert "tidy" in app.reasonings


def test_a_mode_whose_settings_exit_is_left_out_too() -> None:
    class Exiting(TidyReasoning):
        @classmethod
        def get_user_settings(cls) -> dict[str, object]:
            raise SystemExit(1)

    manager = create_plugin_manager()
    manager.register(types.SimpleNamespace(ragloom_reasonings=hookimpl(lambda: [Exiting])), "x")
    (loaded,) = collect_plugins(manager)
    assert loaded.info.error is not None
    assert loaded.info.error.endswith("Exiting.get_user_settings() raised SystemExit: 1")
