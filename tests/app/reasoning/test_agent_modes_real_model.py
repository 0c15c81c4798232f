"""Each agent mode with the real local model, answering from indexed documents.

Greedy decoding makes the answers reproducible on a given build of llama.cpp, so these
check what a user would: the documents were searched, the answer holds the fact and
cites the file it came from, and no prompt went past the model's context.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.settings import AppSettings

pytestmark = pytest.mark.llm

REACTOR = """# The Zorblax reactor

The Zorblax reactor runs at 451 kelvin. It was commissioned in 2019 in Lund.

## Staff

Dr. Imre Vass has directed the plant since 2021. The cooling loop is flushed every 90 days.
"""
CANTEEN = "The canteen opens at eight in the morning and serves soup on Fridays.\n"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> ChatPage:
    folder = tmp_path_factory.mktemp("docs")
    (folder / "reactor.md").write_text(REACTOR, encoding="utf-8")
    (folder / "canteen.txt").write_text(CANTEEN, encoding="utf-8")
    app = BaseApp(AppSettings(data_dir=tmp_path_factory.mktemp("data"))).start()
    index = app.indices.get("My files")
    outcomes = [
        event
        for event in index.get_indexing_pipeline({}).stream(sorted(folder.iterdir()))
        if isinstance(event, FileOutcome)
    ]
    assert all(o.status == "indexed" for o in outcomes), outcomes
    return ChatPage(app)


def _ask(page: ChatPage, mode: str, question: str) -> dict[str, Any]:
    *_, finished = page.ask(question, mode=mode)
    assert isinstance(finished, AnswerFinished)
    record = finished.record.to_dict()
    assert not [s for s in record["steps"] if s["step"] == "error"], record
    window = page.app.llm().context_window
    for usage in (s for s in record["steps"] if s["event"] == "usage"):
        assert usage["prompt_tokens"] + usage["completion_tokens"] <= window
    return record


def _searched(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for s in record["steps"]
        if s["event"] == "finished" and s["step"].endswith(":docsearch") and not s.get("error")
    ]


def test_react_searches_the_documents_and_cites_what_it_found(page: ChatPage) -> None:
    record = _ask(page, "react", "At what temperature does the Zorblax reactor run?")
    assert _searched(record), record["steps"]
    assert "451" in record["answer"], record["answer"]
    assert "reactor.md" in {c["source"] for c in record["citations"]}, record


def test_rewoo_plans_with_the_grammar_then_cites_what_it_found(page: ChatPage) -> None:
    record = _ask(page, "rewoo", "Who directs the Zorblax plant, and since when?")
    plan = next(s for s in record["steps"] if s["event"] == "plan")
    assert plan["repaired"] is False
    assert plan["plan"][0]["tool"] == "docsearch"
    assert plan["raw"].startswith("#Plan1: ")
    assert _searched(record), record["steps"]
    assert "Vass" in record["answer"], record["answer"]
    assert "reactor.md" in {c["source"] for c in record["citations"]}, record


def test_decomposition_answers_each_part_from_the_documents(page: ChatPage) -> None:
    record = _ask(page, "decompose", "When does the canteen open, and how hot is the reactor?")
    plan = next(s for s in record["steps"] if s["event"] == "plan")
    parts = [s for s in record["steps"] if s["event"] == "finished" and s["step"][:1] == "Q"]
    assert len(parts) == len(plan["plan"]) >= 1
    sources = {c["source"] for c in record["citations"]}
    assert sources, record
    assert "eight" in record["answer"] or "451" in record["answer"], record["answer"]


def test_auto_routes_a_fact_to_fullqa_and_arithmetic_to_rewoo(page: ChatPage) -> None:
    def chosen(record: dict[str, Any]) -> dict[str, Any]:
        return next(s["output"] for s in record["steps"] if s["step"] == "route" and "output" in s)

    fact = _ask(page, "auto", "At what temperature does the Zorblax reactor run?")
    assert chosen(fact)["mode"] == "fullqa"
    assert "451" in fact["answer"], fact["answer"]
    assert "reactor.md" in {c["source"] for c in fact["citations"]}, fact
    computed = _ask(
        page,
        "auto",
        "How many years passed between 2019, when the reactor was commissioned, "
        "and 2021, when Dr. Vass began directing the plant?",
    )
    assert chosen(computed)["mode"] == "rewoo"
    assert _searched(computed), computed["steps"]
    assert computed["answer"], computed
