"""The ragloom command, run as a user runs it: index files, list, ask, remove."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env, run_ragloom
from tests.helpers.pdfs import make_pdf

pytestmark = pytest.mark.llm

REACTOR = """# The Zorblax reactor

The Zorblax reactor runs at 451 kelvin. It was commissioned in 2019 in Lund.

## Maintenance

The cooling loop is flushed every 90 days by the night shift.
"""


def ragloom(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ragloom(*args, env=cli_env(data_dir))


@pytest.fixture(scope="module")
def upload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("upload")
    (folder / "reactor.md").write_text(REACTOR, encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "broken.pdf").write_bytes(make_pdf(["Hello"])[:150])  # cut short
    (folder / "image.txt").write_bytes(bytes(range(256)) * 8)
    (folder / "table.xyz").write_text("a,b\n1,2\n")
    return folder


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


def test_index_add_reports_each_file_and_keeps_the_good_one(upload: Path, data_dir: Path) -> None:
    run = ragloom(data_dir, "index", "add", str(upload), "--json")
    assert run.returncode == 1, run.stderr  # some files failed
    files = {f["file"]: f for f in json.loads(run.stdout)["files"]}
    assert files["reactor.md"]["status"] == "indexed"
    assert files["reactor.md"]["chunks"] >= 1
    assert files["empty.txt"] == {**files["empty.txt"], "status": "failed"}
    assert "empty" in files["empty.txt"]["reason"]
    assert "PDF" in files["broken.pdf"]["reason"]
    assert "binary" in files["image.txt"]["reason"]
    assert "unsupported file type '.xyz'" in files["table.xyz"]["reason"]


def test_same_content_again_is_skipped(upload: Path, data_dir: Path) -> None:
    run = ragloom(data_dir, "index", "add", str(upload / "reactor.md"), "--json")
    assert run.returncode == 0, run.stderr
    (outcome,) = json.loads(run.stdout)["files"]
    assert outcome["status"] == "skipped" and "already indexed" in outcome["reason"]


def test_index_list_shows_status_and_reasons(data_dir: Path) -> None:
    run = ragloom(data_dir, "index", "list", "--json")
    (index,) = json.loads(run.stdout)
    by_name = {f["name"]: f for f in index["files"]}
    assert by_name["reactor.md"]["status"] == "indexed"
    assert by_name["broken.pdf"]["status"] == "failed"


def test_ask_json_answers_with_a_citation(data_dir: Path) -> None:
    run = ragloom(data_dir, "ask", "At what temperature does the Zorblax reactor run?", "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert set(record) == {"answer", "mode", "citations", "steps", "usage", "precheck", "grounding"}
    # The real model's wording varies: the check ran, sentence by sentence.
    assert record["grounding"]["status"] in ("supported", "partly")
    assert all("supported_by" in s for s in record["grounding"]["sentences"])
    assert record["mode"] == "fullqa"
    assert record["precheck"]["declined"] is False  # "Zorblax" is in the documents
    assert "451" in record["answer"]
    assert any(
        c["source"] == "reactor.md" and "451 kelvin" in c["text"] for c in record["citations"]
    )
    assert record["usage"]["llm_calls"] == 1
    assert record["usage"]["prompt_tokens"] > 0 and record["usage"]["completion_tokens"] > 0
    assert next(s["step"] for s in record["steps"]) == "retrieve"


def test_ask_rewoo_json_shows_the_plan_each_tool_call_and_usage(data_dir: Path) -> None:
    question = "At what temperature does the Zorblax reactor run?"
    run = ragloom(data_dir, "ask", question, "--mode", "rewoo", "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["mode"] == "rewoo"
    plan = next(s for s in record["steps"] if s["event"] == "plan")
    assert plan["plan"][0]["tool"] == "docsearch" and plan["repaired"] is False
    call = next(
        s for s in record["steps"] if s["step"] == "E1:docsearch" and s["event"] == "finished"
    )
    assert call["output"]["input"] and "451 kelvin" in call["output"]["output"]
    assert call["seconds"] >= 0
    assert record["usage"]["llm_calls"] >= 2  # the planner and the solver, at least
    purposes = [s["step"] for s in record["steps"] if s["event"] == "usage"]
    assert purposes[0] == "llm:plan" and purposes[-1] == "llm:solve"
    assert record["usage"]["prompt_tokens"] == sum(
        s["prompt_tokens"] for s in record["steps"] if s["event"] == "usage"
    )
    assert [c["source"] for c in record["citations"]] == ["reactor.md"]


def test_ask_searches_each_index_as_its_index_settings_say(data_dir: Path) -> None:
    question = "At what temperature does the Zorblax reactor run?"
    option = "My files:retrieval_mode=fulltext"
    run = ragloom(data_dir, "ask", question, "--index-setting", option, "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["citations"] and all(
        set(c["found_by"]) == {"fulltext"} for c in record["citations"]
    )


def test_an_index_setting_it_does_not_allow_is_a_clear_error(data_dir: Path) -> None:
    run = ragloom(data_dir, "ask", "Anything?", "--index-setting", "My files:mmr_lambda=7")
    assert run.returncode == 2
    assert "index 'My files': mmr_lambda must be between 0.0 and 1.0, got 7.0" in run.stderr
    run = ragloom(data_dir, "ask", "Anything?", "--index-setting", "My files=7")
    assert run.returncode == 2 and "an index setting is INDEX:KEY=VALUE" in run.stderr


def test_unknown_mode_is_a_clear_error(data_dir: Path) -> None:
    run = ragloom(data_dir, "ask", "Anything?", "--mode", "telepathy")
    assert run.returncode == 2
    assert (
        "unknown mode 'telepathy' (available: fullqa, decompose, react, rewoo, auto)" in run.stderr
    )


def test_remove_takes_the_file_out_of_every_store(data_dir: Path) -> None:
    assert ragloom(data_dir, "index", "remove", "reactor.md").returncode == 0
    listing = json.loads(ragloom(data_dir, "index", "list", "--json").stdout)
    assert "reactor.md" not in {f["name"] for f in listing[0]["files"]}
    run = ragloom(data_dir, "ask", "At what temperature does the Zorblax reactor run?", "--json")
    assert json.loads(run.stdout)["citations"] == []


def test_models_prepares_and_names_the_bundled_models(data_dir: Path) -> None:
    run = ragloom(data_dir, "models")
    assert run.returncode == 0, run.stderr
    assert "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0), verified sha256" in run.stdout
    assert "all-MiniLM-L6-v2" in run.stdout


def test_ask_takes_the_modes_settings_typed_and_refuses_what_it_lacks(data_dir: Path) -> None:
    question = "At what temperature does the Zorblax reactor run?"
    run = ragloom(data_dir, "ask", question, "--setting", "top_k=1", "--json")
    assert run.returncode == 0, run.stderr
    retrieved = next(
        s for s in json.loads(run.stdout)["steps"] if s["step"] == "retrieve" and "input" in s
    )
    assert retrieved["input"]["top_k"] == 1
    run = ragloom(data_dir, "ask", question, "--setting", "top_k=99")
    assert run.returncode == 2 and "top_k must be between 1 and 20, got 99" in run.stderr
    run = ragloom(data_dir, "ask", question, "--mode", "auto", "--setting", "plan=yes")
    assert run.returncode == 2
    assert "no such setting: plan (this mode's settings: single_mode," in run.stderr
    run = ragloom(data_dir, "modes", "--show-settings")
    assert run.returncode == 0
    assert "--setting comparison_mode=fullqa" in run.stdout
