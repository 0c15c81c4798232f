"""Every mode declines without the model when the documents lack what a question names.

A real app (SQLite, Chroma, BM25, hashed embeddings) and a replay LLM whose prompts are
recorded: a declined question must leave it uncalled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.events import AnswerRecord, CitationsFound, StepFinished
from ragloom_app.app import BaseApp
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.file import FileIndex
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.testing import ReplayLLM
from tests.helpers.file_index import hash_file_index
from tests.helpers.scripted_app import scripted_app

DOCS = {
    "datefunc.md": "# Date functions\n\nThe date() function returns the date as YYYY-MM-DD. "
    "The strftime() function formats a date.\n",
    "pragma.md": "# Pragmas\n\nPRAGMA journal_mode sets DELETE, WAL or OFF.\n",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return scripted_app(
        tmp_path_factory.mktemp("precheck"),
        {"replay": {"class": "ragloom_app.testing.ReplayLLM"}},
        DOCS,
    )


def _ask(
    app: BaseApp, question: str, mode: str = "fullqa", **kwargs: object
) -> tuple[AnswerRecord, ReplayLLM]:
    llm = app.llm()
    assert isinstance(llm, ReplayLLM)
    llm.replies[:] = ["It returns the date [1]."]
    llm.prompts.clear()
    events = list(ChatPage(app).ask(question, mode=mode, **kwargs))  # type: ignore[arg-type]
    finished = events[-1]
    assert isinstance(finished, AnswerFinished)
    assert [e for e in events if isinstance(e, CitationsFound)]
    return finished.record, llm


def test_an_absent_function_is_declined_without_calling_the_model(app: BaseApp) -> None:
    record, llm = _ask(app, "What does timediff() return for two dates?")
    assert llm.prompts == []
    assert record.answer.startswith("The documents do not mention `timediff()`.")
    assert record.precheck is not None and record.precheck.missing == ["timediff()"]
    assert record.citations and record.citations[0].number == 1  # the closest passages
    assert record.usage.llm_calls == 0
    (step,) = [s for s in record.steps if isinstance(s, StepFinished) and s.name == "precheck"]
    assert step.label and step.output == record.precheck
    assert record.to_dict()["precheck"]["declined"] is True


def test_a_present_function_goes_to_the_model(app: BaseApp) -> None:
    record, llm = _ask(app, "What does date() return?")
    assert len(llm.prompts) == 1
    assert record.answer == "It returns the date [1]."
    assert record.precheck is not None and not record.precheck.declined


def test_the_check_can_be_turned_off(app: BaseApp) -> None:
    record, llm = _ask(app, "What does timediff() return?", settings={"precheck": False})
    assert len(llm.prompts) == 1 and record.precheck is None


def test_only_the_selected_sources_count(app: BaseApp) -> None:
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    pragma = [s["id"] for s in index.list_sources() if s["name"] == "pragma.md"]
    record, llm = _ask(app, "What does strftime() format?", selected_sources={"My files": pragma})
    assert llm.prompts == [] and record.precheck is not None
    assert record.precheck.missing == ["strftime()"]


@pytest.mark.parametrize("mode", ["decompose", "rewoo", "react"])
def test_an_agent_declines_before_it_plans(app: BaseApp, mode: str) -> None:
    record, llm = _ask(app, "What does timediff() return for two dates?", mode=mode)
    assert llm.prompts == []  # no plan, no sub-questions, no thought
    assert record.answer.startswith("The documents do not mention `timediff()`.")
    assert record.citations and record.precheck is not None and record.precheck.declined
    names = [s.name for s in record.steps]
    assert names[:2] == ["precheck", "precheck"] and "retrieve" in names
    off, llm = _ask(app, "What does timediff() return?", mode=mode, settings={"precheck": False})
    assert llm.prompts and off.precheck is None


@pytest.mark.parametrize("mode", ["decompose", "rewoo", "react"])
def test_an_agent_runs_when_the_documents_hold_what_is_named(app: BaseApp, mode: str) -> None:
    record, llm = _ask(app, "What does date() return?", mode=mode)
    assert llm.prompts
    assert record.precheck is not None and not record.precheck.declined


def test_a_file_index_answers_from_its_vocabulary(tmp_path: Path) -> None:
    index = hash_file_index(tmp_path)
    (tmp_path / "a.md").write_text("Call sqlite3_open_v2() with SQLITE_OPEN_READONLY.\n")
    (tmp_path / "b.md").write_text("BEGIN IMMEDIATE starts a write transaction.\n")
    outcomes = index.get_indexing_pipeline({}).run([tmp_path / "a.md", tmp_path / "b.md"])
    assert all(o.status == "indexed" for o in outcomes)
    terms = ["sqlite3_open_v2", "SQLITE_OPEN_READONLY", "BEGIN IMMEDIATE", "BEGIN CONCURRENT"]
    assert index.find_terms(terms) == {
        "sqlite3_open_v2": True,
        "SQLITE_OPEN_READONLY": True,
        "BEGIN IMMEDIATE": True,
        "BEGIN CONCURRENT": False,
    }
    a_id = next(o.source_id for o in outcomes if o.name == "a.md")
    assert a_id is not None
    assert index.find_terms(["sqlite3_open_v2", "immediate"], [a_id]) == {
        "sqlite3_open_v2": True,
        "immediate": False,
    }
    # Every source selected is no filter at all, as for retrieval.
    every = [o.source_id for o in outcomes if o.source_id]
    assert index.find_terms(["immediate"], every) == {"immediate": True}


def test_an_index_type_that_cannot_look_terms_up_answers_none(tmp_path: Path) -> None:
    index = hash_file_index(tmp_path)
    assert BaseIndex.find_terms(index, ["x"]) == {"x": None}
