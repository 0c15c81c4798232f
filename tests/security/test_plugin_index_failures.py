"""A plugin's index that fails to start, to give retrievers or to search is left out with
its error shown; the app starts and questions are answered from the other indices.

Before, an ``on_start`` that raised stopped the app at every start (a crash loop no
command could get out of), and a ``get_retriever_pipelines`` or a search that raised
failed every question, whatever index it was about.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import types
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragloom.events import StepFinished
from ragloom.retrieval import Retriever
from ragloom.schema import RetrievedChunk
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.index import manager
from ragloom_app.index.base import BaseIndex
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.plugins import hookimpl
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings
from ragloom_app.testing import StaticRetriever
from ragloom_app.ui.index_settings import index_specs
from ragloom_app.ui.indices_panel import IndexAdminHandlers
from ragloom_app.ui.plugins_tab import plugins_page_html

pytestmark = pytest.mark.security

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"
QUESTION = "How hot does the Zorblax reactor run?"
SECRET = "/srv/plugin-data/store.db"  # a path the user must not be shown
REFERENCE = re.compile(r"log reference ([0-9a-f]{8})")


class PluginIndex(BaseIndex):
    """A plugin's index type; ``failure`` says where it breaks (class-wide, per test)."""

    failure: str | None = None  # "start", "settings", "retrievers" or "search"

    @classmethod
    def get_user_settings(cls) -> dict[str, dict[str, Any]]:
        if cls.failure == "settings":
            raise RuntimeError(f"no settings in {SECRET}")
        return {}

    def on_start(self) -> None:
        if type(self).failure == "start":
            raise OSError(f"cannot open {SECRET}")

    def get_retriever_pipelines(
        self, settings: Mapping[str, Any], selected: Collection[str] | None = None
    ) -> list[Retriever]:
        if type(self).failure == "retrievers":
            raise RuntimeError(f"no store at {SECRET}")
        if type(self).failure == "search":
            return [BrokenRetriever()]
        return [StaticRetriever(passages=["The plugin says the reactor is blue."])]


class BrokenRetriever(Retriever):
    def run(
        self, query: str, top_k: int | None = None, source_ids: Collection[str] | None = None
    ) -> list[RetrievedChunk]:
        raise ConnectionError(f"lost the store at {SECRET}")


TYPE_ID = f"{PluginIndex.__module__}.{PluginIndex.__qualname__}"


def _start(data_dir: Path) -> BaseApp:
    """The app with the plugin and a scripted LLM, as a fresh process would start it."""
    plugin = types.ModuleType("index_plugin")
    plugin.ragloom_index_types = hookimpl(lambda: [PluginIndex])  # type: ignore[attr-defined]
    manager = create_plugin_manager()
    manager.register(plugin, name="ragloom-index-plugin")
    settings = AppSettings(data_dir=data_dir, first_run_docs=None)
    settings.llms = {"replay": {"class": "ragloom_app.testing.ReplayLLM"}}
    settings.default_llm = "replay"
    settings.embeddings = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
    settings.default_embedding = "hash"
    return BaseApp(settings, manager).start()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data folder with "My files" (one document) and "Plugin notes", the plugin's."""
    PluginIndex.failure = None
    app = _start(tmp_path / "data")
    (tmp_path / "reactor.md").write_text(REACTOR, encoding="utf-8")
    (outcome,) = (
        app.indices.get("My files").get_indexing_pipeline({}).run([tmp_path / "reactor.md"])
    )
    assert outcome.status == "indexed"
    app.indices.create("Plugin notes", TYPE_ID)
    yield tmp_path / "data"
    PluginIndex.failure = None


def _answer(app: BaseApp) -> tuple[dict[str, Any], list[StepFinished]]:
    events = list(ChatPage(app).ask(QUESTION))
    assert isinstance(events[-1], AnswerFinished)
    return events[-1].record.to_dict(), [e for e in events if isinstance(e, StepFinished)]


def test_an_index_that_fails_to_start_is_left_out_and_shown(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    PluginIndex.failure = "start"
    app = _start(data_dir)  # before: OSError, at every start
    assert [index.name for index in app.indices.indices] == ["My files"]
    reason = app.indices.unavailable["Plugin notes"]
    assert reason.startswith(
        "Starting the index 'Plugin notes' failed: a file or device could not be used"
    )
    (reference,) = REFERENCE.findall(reason)
    (logged,) = [r for r in caplog.records if reference in r.getMessage()]
    assert logged.exc_info and SECRET in str(logged.exc_info[1])  # the whole story, logged
    # Shown where a user looks: the Plugins tab and the Files tab's index table.
    for page in (plugins_page_html(app), IndexAdminHandlers(app, str).table()):
        assert "Indices left out" in page and "Plugin notes" in page and reference in page
        assert SECRET not in page
    # Questions are answered from the other index.
    record, _ = _answer(app)
    assert record["answer"] == "The documents say so [1]."
    assert [c["source"] for c in record["citations"]] == ["reactor.md"]


def test_an_index_that_failed_to_start_is_started_again_at_a_later_listing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Once START_RETRY_SECONDS have passed, not at every listing (a start that fails may
    wait out a server's timeout); a retry that fails keeps the first failure's reason,
    whose log reference holds the trace. Before, such an index stayed out until the
    process started again, and its jobs failed "its index was deleted"."""
    PluginIndex.failure = "start"
    app = _start(data_dir)
    reason = app.indices.unavailable["Plugin notes"]
    PluginIndex.failure = None
    assert [index.name for index in app.indices.indices] == ["My files"]  # not yet
    monkeypatch.setattr(manager, "START_RETRY_SECONDS", 0.0, raising=False)
    PluginIndex.failure = "start"
    caplog.clear()
    assert [index.name for index in app.indices.indices] == ["My files"]
    assert app.indices.unavailable == {"Plugin notes": reason}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    PluginIndex.failure = None
    assert [index.name for index in app.indices.indices] == ["My files", "Plugin notes"]
    assert app.indices.unavailable == {} and "Indices left out" not in plugins_page_html(app)


def test_index_list_names_an_index_left_out_and_why(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragloom_app.cli import _cmd_index_list

    PluginIndex.failure = "start"
    app = _start(data_dir)
    _cmd_index_list(app, argparse.Namespace(json=False))
    shown = capsys.readouterr().out
    assert "Plugin notes (unavailable: Starting the index 'Plugin notes' failed: " in shown
    assert "My files (FileIndex, 1 files)" in shown and SECRET not in shown
    _cmd_index_list(app, argparse.Namespace(json=True))
    listed = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert listed["Plugin notes"]["unavailable"].startswith("Starting the index")


def test_an_index_type_whose_settings_fail_is_left_out_at_start_and_shown(
    data_dir: Path,
) -> None:
    """Its search form could not be drawn (the web UI, /modes): the plugin is left out when
    it registers, and its index with it; the other index answers."""
    PluginIndex.failure = "settings"
    app = _start(data_dir)
    assert [index.name for index in app.indices.indices] == ["My files"]
    assert "Plugin notes" in app.indices.unavailable
    page = plugins_page_html(app)
    assert "get_user_settings() raised RuntimeError" in page and SECRET not in page
    record, _ = _answer(app)
    assert record["answer"] == "The documents say so [1]."
    assert [c["source"] for c in record["citations"]] == ["reactor.md"]


@pytest.mark.parametrize("failure", ["retrievers", "search"])
def test_an_index_whose_retrievers_fail_is_left_out_of_the_answer(
    data_dir: Path, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    PluginIndex.failure = failure
    app = _start(data_dir)
    assert [index.name for index in app.indices.indices] == ["My files", "Plugin notes"]
    record, steps = _answer(app)
    assert record["answer"] == "The documents say so [1]."
    assert [c["source"] for c in record["citations"]] == ["reactor.md"]
    (left_out,) = [s for s in steps if s.name == "index:Plugin notes"]
    assert left_out.error is not None
    assert left_out.error.startswith("Left out: Searching the index 'Plugin notes' failed: ")
    assert SECRET not in left_out.error
    (reference,) = REFERENCE.findall(left_out.error)
    assert any(reference in r.getMessage() and r.exc_info for r in caplog.records)
    # The record (what `ask --json` prints and the usage panel shows) says so too.
    (step,) = [s for s in record["steps"] if s["step"] == "index:Plugin notes"]
    assert step["error"] == left_out.error


def test_without_failures_the_plugin_index_is_searched(data_dir: Path) -> None:
    app = _start(data_dir)
    record, steps = _answer(app)
    assert not [s for s in steps if s.error]
    assert {c["source"] for c in record["citations"]} <= {"reactor.md", "sample.md"}
    retrieve = next(s for s in record["steps"] if s["step"] == "retrieve" and "output" in s)
    assert "sample.md" in {hit["source"] for hit in retrieve["output"]}


def test_the_chat_shows_the_other_indices_settings_when_one_types_settings_fail(
    data_dir: Path,
) -> None:
    PluginIndex.failure = "settings"
    assert list(index_specs(_start(data_dir), LOCAL_USER)) == ["My files"]
