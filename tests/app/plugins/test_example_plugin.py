"""The example plugin (examples/ragloom-plugin-example) inside a real app, in-process.

Its module is put on sys.path and registered on the app's PluginManager: the same hooks
the entry point reaches once pip-installed (tests/e2e/test_plugins_pip.py does that).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ragloom.agents.tools.runner import tools_sandbox
from ragloom.events import AnswerCollector, Citation
from ragloom_app import cli
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.reasoning import ReasoningState
from ragloom_app.settings import AppSettings
from tests.helpers.dist_info import write_dist_info
from tests.helpers.scripted_llm import ScriptedLLM

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ragloom-plugin-example"
FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    # Tool sandbox workers get sys.path when they start: new ones, to import the plugin.
    tools_sandbox().close()
    import ragloom_plugin_example

    yield ragloom_plugin_example
    for name in [n for n in sys.modules if n.startswith("ragloom_plugin_example")]:
        del sys.modules[name]


@pytest.fixture
def app(tmp_path: Path, example: ModuleType) -> BaseApp:
    manager = create_plugin_manager()
    manager.register(example, name="example")
    settings = AppSettings(
        data_dir=tmp_path / "data",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
    )
    return BaseApp(settings, plugin_manager=manager).start()


def test_the_example_passes_its_own_contract_tests() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 passed" in run.stdout


def test_an_rst_upload_is_read_by_the_plugin_and_found(app: BaseApp) -> None:
    sample = EXAMPLE / "tests" / "sample.rst"
    index = app.indices.get("My files")
    (outcome,) = index.get_indexing_pipeline({}).run([sample])
    assert outcome.status == "indexed", outcome.reason
    (hit,) = index.get_retriever_pipelines({"top_k": 1})[0]("Where are spare pumps kept?")
    assert hit.chunk.source_name == "sample.rst"
    assert "=====" not in hit.chunk.text and "runs at 451 kelvin" in hit.chunk.text


def test_the_index_form_offers_the_plugin_file_types(app: BaseApp) -> None:
    extensions = app.indices.admin_settings(FILE_INDEX)["extensions"]
    assert {".rst", ".rest", ".md"} <= set(extensions["choices"])
    config = app.indices.normalize_config(FILE_INDEX, {"extensions": [".rst"]})
    only_rst = app.indices.create("Manuals", FILE_INDEX, config)
    assert only_rst.config["extensions"] == [".rst"]
    (refused,) = only_rst.get_indexing_pipeline({}).run([EXAMPLE / "README.md"])
    assert refused.status == "failed" and "supported: .rst" in str(refused.reason)


def test_an_index_made_with_every_file_type_takes_a_plugin_installed_later(
    tmp_path: Path, example: ModuleType
) -> None:
    settings = AppSettings(data_dir=tmp_path / "data")
    before = BaseApp(settings, create_plugin_manager()).start()
    every = before.indices.admin_settings(FILE_INDEX)["extensions"]["choices"]
    # What the UI's form sends when the preselected file types are left as they are:
    before.indices.create(
        "Docs", FILE_INDEX, before.indices.normalize_config(FILE_INDEX, {"extensions": every})
    )
    manager = create_plugin_manager()
    manager.register(example, name="example")
    after = BaseApp(settings, plugin_manager=manager).start()
    (outcome,) = (
        after.indices.get("Docs").get_indexing_pipeline({}).run([EXAMPLE / "tests" / "sample.rst"])
    )
    assert outcome.status == "indexed", outcome.reason


def test_without_the_plugin_rst_is_not_a_file_type(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data"), create_plugin_manager()).start()
    with pytest.raises(ValueError, match="file types must be some of"):
        app.indices.normalize_config(FILE_INDEX, {"extensions": [".rst"]})


def test_verified_answers_through_the_chat_page_and_marks_what_is_unsupported(
    app: BaseApp,
) -> None:
    app.indices.get("My files").get_indexing_pipeline({}).run([EXAMPLE / "tests" / "sample.rst"])
    llm = ScriptedLLM(replies=["It runs at 451 kelvin [1]. It is painted green [1]."])
    page = ChatPage(app)
    pipeline = page.create_pipeline("verified", {"min_support": 0.6}, ReasoningState(llm=llm))
    record = AnswerCollector("verified").extend(pipeline.stream("How hot is it?")).to_dict(0)
    assert record["answer"] == "It runs at 451 kelvin [1]. It is painted green [1] (unsupported)."
    assert [c["source"] for c in record["citations"]] == ["sample.rst"]
    assert ("Verified answer", "verified") in [
        (cls.get_info().name, mode) for mode, cls in app.reasonings.items()
    ]


DATE_QUESTION = "How many days are there from 2024-01-01 to 2024-03-01?"


def test_react_calls_the_plugin_tool(app: BaseApp) -> None:
    llm = ScriptedLLM(
        replies=[
            ' Count them.\nAction: date_calc\nAction Input: {"start": "2024-01-01", '
            '"end": "2024-03-01"}',
            " I know it.\nFinal Answer: There are 60 days.",
        ]
    )
    state = ReasoningState(llm=llm, tools=app.tools)
    pipeline = ChatPage(app).create_pipeline("react", {"search_first": False}, state)
    record = AnswerCollector("react").extend(pipeline.stream(DATE_QUESTION)).to_dict(0)
    assert record["answer"] == "There are 60 days."
    assert "date_calc" in llm.prompts[0][0].content  # offered in the instructions
    assert "Observation: 60 days from 2024-01-01 to 2024-03-01" in llm.prompts[1][-1].content


def test_rewoo_plans_with_the_plugin_tool(app: BaseApp) -> None:
    plan = (
        "#Plan1: Look for the dates.\n#E1 = docsearch[trip dates]\n"  # plans search first
        "#Plan2: Count the days.\n#E2 = date_calc[2024-01-01 to 2024-03-01]\n"
    )
    llm = ScriptedLLM(replies=[plan, "There are 60 days."])
    state = ReasoningState(llm=llm, tools=app.tools)
    pipeline = ChatPage(app).create_pipeline("rewoo", {}, state)
    record = AnswerCollector("rewoo").extend(pipeline.stream(DATE_QUESTION)).to_dict(0)
    assert record["answer"] == "There are 60 days."
    assert "date_calc" in llm.prompts[0][0].content
    assert "60 days from 2024-01-01 to 2024-03-01" in llm.prompts[1][-1].content


def test_ask_records_the_plugin_mode(app: BaseApp) -> None:
    app.llm_specs["scripted"] = {
        "class": "tests.helpers.scripted_llm.ScriptedLLM",
        "replies": ["I found nothing about it."],
    }
    app.settings.default_llm = "scripted"
    *_, finished = ChatPage(app).ask("Anything?", mode="verified")
    assert isinstance(finished, AnswerFinished)
    assert finished.record.mode == "verified"
    assert any(step.name == "verify" for step in finished.record.steps)


def test_verified_reads_citations_and_sentences_as_ragloom_does(example: ModuleType) -> None:
    from ragloom_plugin_example.reasoning import verify_answer

    # Ragloom's own parsing (ragloom.qa.citations), not a copy: "[2; 1]" cites both, and
    # a CJK sentence ends at its own mark.
    citations = [
        Citation(1, "a.md", None, "The reactor runs at 451 kelvin.", chunk_id="a"),
        Citation(2, "b.md", None, "Built in Oslo.", chunk_id="b"),
    ]
    answer = "反应堆很热。It runs at 451 kelvin in Oslo [2; 1]."
    marked, checks = verify_answer(answer, citations, 0.5)
    assert [check["cites"] for check in checks] == [[], [2, 1]]
    assert marked == "反应堆很热。 (unsupported)It runs at 451 kelvin in Oslo [2; 1]."


@pytest.fixture
def installed_example(
    example: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> ModuleType:
    """The example as pip leaves it: a distribution whose entry point is its module."""
    write_dist_info(
        tmp_path / "site", "ragloom-plugin-example", "0.1.0", {"example": "ragloom_plugin_example"}
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return example


def test_rst_preview_prints_the_words_ragloom_indexes(
    installed_example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["rst-preview", str(EXAMPLE / "tests" / "sample.rst")]) == 0
    shown = capsys.readouterr()
    assert "The Zorblax reactor runs at 451 kelvin." in shown.out
    assert "**" not in shown.out and "This comment" not in shown.out
    assert shown.err.startswith("-- ") and " words" in shown.err
    assert cli.main(["rst-preview", "--chars", "19", str(EXAMPLE / "tests" / "sample.rst")]) == 0
    cut = capsys.readouterr()
    assert cut.out == "The Zorblax reactor\n" and "(the first 19 characters of " in cut.err


def test_rst_preview_refuses_an_empty_or_oversized_file(
    installed_example: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "empty.rst"
    empty.write_text("")
    assert cli.main(["rst-preview", str(empty)]) == 1
    assert capsys.readouterr().err.startswith("rst-preview: empty.rst: ")
    monkeypatch.setattr(installed_example.commands, "PREVIEW_MAX_BYTES", 100)
    assert cli.main(["rst-preview", str(EXAMPLE / "tests" / "sample.rst")]) == 1
    assert "previews stop at 100 (PREVIEW_MAX_BYTES)" in capsys.readouterr().err
    assert cli.main(["rst-preview", str(tmp_path / "missing.rst")]) == 2  # a usage error
