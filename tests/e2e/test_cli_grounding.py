"""``ragloom ask`` says which sentences its passages do not support, and ``--json`` how.

Run as a user runs it (a subprocess over a settings file whose scripted LLM gives one
supported and one unsupported sentence, or only an unsupported one).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env, run_ragloom

DOCUMENT = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin. It was commissioned in 2019.\n"
PARTLY = "It runs at 451 kelvin [1]. It was built in 1962 [1]."
SETTINGS = """
LLMS = {{"scripted": {{"class": "ragloom_app.testing.ReplayLLM", "replies": [{reply!r}]}}}}
DEFAULT_LLM = "scripted"
EMBEDDINGS = {{"hash": {{"class": "ragloom_app.testing.HashEmbeddings"}}}}
DEFAULT_EMBEDDING = "hash"
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-grounding")
    (folder / "reactor.md").write_text(DOCUMENT, encoding="utf-8")
    added = _ragloom(folder, PARTLY, "index", "add", str(folder / "reactor.md"))
    assert added.returncode == 0, added.stderr
    return folder


def _ragloom(folder: Path, reply: str, *args: str) -> subprocess.CompletedProcess[str]:
    settings = folder / "settings.py"
    settings.write_text(SETTINGS.format(reply=reply), encoding="utf-8")
    run = run_ragloom(*args, env=cli_env(folder / "data", settings=settings), timeout=300)
    assert run.returncode == 0, run.stderr
    return run


def test_ask_names_each_unsupported_sentence_after_the_answer(folder: Path) -> None:
    run = _ragloom(folder, PARTLY, "ask", "How hot is the reactor?")
    assert run.stdout.startswith(PARTLY + "\n")
    assert "Not in the passages it cites (1962): It was built in 1962 [1]." in run.stdout
    assert "(451" not in run.stdout


def test_ask_json_has_the_grounding_of_each_sentence(folder: Path) -> None:
    record = json.loads(_ragloom(folder, PARTLY, "ask", "How hot?", "--json").stdout)
    assert {"answer", "mode", "citations", "steps", "usage"} < set(record)
    grounding = record["grounding"]
    assert grounding["status"] == "partly" and grounding["declined"] is False
    assert [
        (s["supported"], s["unsupported"], s["supported_by"]) for s in grounding["sentences"]
    ] == [
        (True, [], [1]),
        (False, ["1962"], []),
    ]


def test_ask_says_when_the_answer_became_a_decline(folder: Path) -> None:
    run = _ragloom(folder, "It runs at 900 kelvin [1].", "ask", "How hot is the reactor?")
    assert "\nNot supported by the passages it cites: The documents I found do not" in run.stdout
    assert "The closest passages: [1] reactor.md." in run.stdout
