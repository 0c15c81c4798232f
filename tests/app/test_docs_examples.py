"""The code in the docs runs: the reasoning plugin example works as a registered mode."""

import re
from pathlib import Path

from ragloom.events import AnswerCollector
from ragloom_app.app import BaseApp
from ragloom_app.reasoning import BaseReasoning, ReasoningState
from ragloom_app.settings import AppSettings
from ragloom_app.testing import ReplayLLM, check_reasoning
from tests.helpers.scripted_llm import ScriptedLLM

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def test_reasoning_plugin_example_answers_from_the_best_passage(tmp_path: Path) -> None:
    example, settings_block, _ = _python_blocks("reasoning-plugins.md")
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(compile(example, "reasoning-plugins.md", "exec"), namespace)
    best_passage = namespace["BestPassage"]
    assert isinstance(best_passage, type) and issubclass(best_passage, BaseReasoning)
    assert "my_package.reasoning.BestPassage" in settings_block

    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    app.register_reasoning(best_passage)
    (tmp_path / "reactor.md").write_text("The Zorblax reactor runs at 451 kelvin.\n")
    app.indices.indices[0].get_indexing_pipeline({}).run([tmp_path / "reactor.md"])

    from ragloom_app.pages.chat import ChatPage

    llm = ScriptedLLM(replies=["It runs at 451 kelvin [1]."])
    pipeline = ChatPage(app).create_pipeline("best", state=ReasoningState(llm=llm))
    record = AnswerCollector("best").extend(pipeline.stream("How hot is the reactor?"))
    assert record.answer == "It runs at 451 kelvin [1]."
    assert [c.source for c in record.citations] == ["reactor.md"]
    assert "451 kelvin" in llm.prompts[0][1].content


def test_the_planning_example_shows_its_plan_and_labelled_steps() -> None:
    *_, planning = _python_blocks("reasoning-plugins.md")
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(compile(planning, "reasoning-plugins.md", "exec"), namespace)
    checklist = namespace["Checklist"]
    assert isinstance(checklist, type) and issubclass(checklist, BaseReasoning)
    llm = ReplayLLM(replies=["It runs at 451 kelvin [1]."])
    record = check_reasoning(checklist, llm=llm)  # the contract a plugin author runs
    plan = next(step for step in record["steps"] if step["event"] == "plan")
    assert [(i["id"], i["label"]) for i in plan["plan"]] == [
        ("C1", "Look the question up in the files"),
        ("C2", "Answer from them"),
    ]
    labels = {s["step"]: s["label"] for s in record["steps"] if s["event"] == "started"}
    assert labels == {"C1": "Looking the question up in the files", "answer": "Writing the answer"}
