"""``ragloom ask`` prints no terminal control sequence a document (or the model) holds.

A document can hold escape sequences that clear the screen, retitle the window, hide
text, overwrite lines (carriage return), disguise a link (OSC 8) or reorder text (bidi
controls); a model that quotes it repeats them. Run as a user runs it (a subprocess,
over a settings file with a scripted LLM that quotes the document), ``ragloom ask``
prints the words without a single control character but newline and tab; ``--json``
keeps them, escaped, so a program reads what the document says.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from sqlmodel import Session

from ragloom_app.db import create_db_engine
from ragloom_app.db.models import IndexRecord
from tests.helpers.cli import cli_env, run_ragloom

pytestmark = pytest.mark.security

HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;pwned\x07The reactor runs at \x1b[8m451\x1b[28m kelvin."
    "\r\x1b[Kfake line \x1b]8;;https://evil.example/\x1b\\safe link\x1b]8;;\x1b\\ "
    "\u202ereversed\u202c \x9b31mC1\x9b0m \x07\x08\x7f\x1bPdevice\x1b\\ end."
)
# Prose around them, or the text reader would take the file for binary (5 % controls).
PROSE = "The plant was commissioned in 2019 and has run without a major outage since. " * 8
DOCUMENT = f"# Reactor\n\n{HOSTILE}\n\n{PROSE}\n"
# The model quotes the document, sequences and all.
SETTINGS = f"""
REPLY = {HOSTILE!r} + " [1]"
LLMS = {{"scripted": {{"class": "ragloom_app.testing.ReplayLLM", "replies": [REPLY]}}}}
DEFAULT_LLM = "scripted"
EMBEDDINGS = {{"hash": {{"class": "ragloom_app.testing.HashEmbeddings"}}}}
DEFAULT_EMBEDDING = "hash"
"""
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _ragloom(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(folder / "data", settings=folder / "settings.py")
    return run_ragloom(*args, env=env, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    (folder / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (folder / "reactor.md").write_text(DOCUMENT, encoding="utf-8")
    added = _ragloom(folder, "index", "add", str(folder / "reactor.md"))
    assert added.returncode == 0, added.stderr
    return folder


def test_ask_prints_the_words_and_no_control_sequence(folder: Path) -> None:
    run = _ragloom(folder, "ask", "How hot does the reactor run?")
    assert run.returncode == 0, run.stderr
    assert not CONTROLS.search(run.stdout), repr(run.stdout)
    # The answer as streamed, then with its citation, then the cited passage.
    answer = "The reactor runs at 451 kelvin.fake line safe link reversed C1  end. [1]"
    assert run.stdout.startswith(answer + "\n"), repr(run.stdout)
    assert "\nWith citations: The reactor runs at 451 kelvin [1].fake line" in run.stdout
    # The reader made the carriage return a newline; the passage is shown on one line.
    assert "[1] reactor.md: # Reactor The reactor runs at 451 kelvin. fake line" in run.stdout
    assert "evil.example" not in run.stdout and "pwned" not in run.stdout


def test_ask_json_keeps_them_escaped(folder: Path) -> None:
    run = _ragloom(folder, "ask", "How hot does the reactor run?", "--json")
    assert run.returncode == 0, run.stderr
    assert not CONTROLS.search(run.stdout), repr(run.stdout)
    assert "\\u001b[2J" in run.stdout and "\\u202e" in run.stdout
    record = json.loads(run.stdout)
    # What the model wrote (with the citations added), for a program to judge.
    assert record["answer"].startswith("\x1b[2J\x1b[H\x1b]0;pwned\x07The reactor")
    assert "\x9b31mC1" in record["answer"]
    assert HOSTILE.replace("\r", "\n") in record["citations"][0]["text"]  # as read


def test_listings_and_errors_print_no_control_sequence(folder: Path) -> None:
    # Index names and what the app says of them are printed too, by index create and
    # list, and errors that quote what was given. Such a name is refused now...
    name = "notes\x1b]0;pwned\x07\x1b[2J"
    created = _ragloom(folder, "index", "create", name)
    assert created.returncode == 2 and "an index name is 1 to 80 characters" in created.stderr
    # ...but an older Ragloom let it in, and its database still holds it.
    engine = create_db_engine(f"sqlite:///{folder / 'data' / 'ragloom.db'}")
    with Session(engine) as session:
        session.add(IndexRecord(name=name, index_type="ragloom_app.index.file.FileIndex"))
        session.commit()
    listing = _ragloom(folder, "index", "list")
    missing = _ragloom(folder, "index", "remove", "gone\x1b[31m.md", "--index", name)
    for run in (created, listing, missing):
        assert not CONTROLS.search(run.stdout + run.stderr), repr(run.stdout + run.stderr)
    assert "notes]0;pwned" not in listing.stdout and "notes (FileIndex, 0 files)" in listing.stdout
    # Quoted with repr, the name shows its escapes as visible text, never as controls.
    assert "not in 'notes\\x1b]0;pwned\\x07\\x1b[2J': gone.md" in missing.stderr
