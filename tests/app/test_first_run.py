"""First run: an empty app indexes the project's docs, and can answer about them."""

from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.settings import AppSettings

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    settings = AppSettings(
        data_dir=tmp_path_factory.mktemp("data"),
        first_run_docs={"index": "Ragloom docs", "path": str(DOCS)},
    )
    app = BaseApp(settings).start()
    outcomes = [e for e in app.seed_first_run() if isinstance(e, FileOutcome)]
    assert outcomes and all(o.status == "indexed" for o in outcomes), outcomes
    return app


def test_docs_are_indexed_once(app: BaseApp) -> None:
    docs = app.indices.get("Ragloom docs")
    names = {source["name"] for source in docs.list_sources()}
    assert {"reasoning-plugins.md", "getting-started.md"} <= names
    assert list(app.seed_first_run()) == []  # not empty any more: nothing to do


@pytest.mark.llm
def test_a_new_user_can_ask_how_to_add_a_reasoning_plugin(app: BaseApp) -> None:
    *_, finished = ChatPage(app).ask("How do I add a reasoning plugin?")
    assert isinstance(finished, AnswerFinished)
    record = finished.record.to_dict()
    assert record["citations"], record
    assert record["citations"][0]["source"] == "reasoning-plugins.md"
    assert "REASONINGS" in record["citations"][0]["text"]


def test_files_no_reader_reads_are_left_out_of_the_first_run(app: BaseApp) -> None:
    names = {source["name"] for source in app.indices.get("Ragloom docs").list_sources()}
    assert (DOCS / "images" / "grounding-marks.png").is_file()
    assert not {name for name in names if name.endswith(".png")}
