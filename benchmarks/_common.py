"""What several benchmarks share (imported by the scripts, which run from this folder;
``make bench`` runs every script here but this one)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.embeddings import Embeddings, SentenceTransformerEmbeddings

if TYPE_CHECKING:
    from ragloom_app.pages.chat import ChatPage
    from ragloom_app.settings import AppSettings

__all__ = [
    "REPO",
    "add_mode_settings_option",
    "ask_record",
    "bench_settings",
    "chosen_modes",
    "configured_embeddings",
    "free_port",
    "mode_settings_of",
]

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the tests' helper)."""
    import sys

    if str(REPO) not in sys.path:  # the scripts run from this folder, not the checkout's root
        sys.path.insert(0, str(REPO))
    from tests.helpers.ports import free_port as tests_free_port

    return tests_free_port()


def configured_embeddings(backend: str | None, precision: str | None = None) -> Embeddings:
    """The embedding model of flowsettings.py (``backend`` and ``precision`` overriding
    its own)."""
    from ragloom_app.settings import AppSettings

    settings = AppSettings.load(REPO / "flowsettings.py")
    spec = dict(settings.embeddings[settings.default_embedding])
    spec.pop("class", None)
    if backend:
        spec["backend"] = backend
    if precision:
        spec["precision"] = precision
    return SentenceTransformerEmbeddings(**spec)


def bench_settings(data_dir: Path, index_name: str, llm: str | None = None) -> AppSettings:
    """flowsettings.py's settings for a benchmark's own app: its data in ``data_dir``, one
    default FileIndex named ``index_name``, no first-run docs; ``llm`` overrides
    DEFAULT_LLM."""
    from ragloom_app.settings import AppSettings

    settings = dataclasses.replace(
        AppSettings.load(REPO / "flowsettings.py"),
        data_dir=data_dir,
        database_url=None,
        first_run_docs=None,
        indices=[{"name": index_name, "type": "ragloom_app.index.file.FileIndex", "config": {}}],
    )
    if llm:
        settings.default_llm = llm
    return settings


def ask_record(
    page: ChatPage, question: str, mode: str, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The answer record (``ask --json``'s shape) of ``question`` put to ``mode``."""
    from ragloom_app.pages.chat import AnswerFinished

    return next(
        event.record.to_dict()
        for event in page.ask(question, mode=mode, settings=settings)
        if isinstance(event, AnswerFinished)
    )


def chosen_modes(record: Mapping[str, Any]) -> list[str]:
    """The modes ``auto`` chose for an answer record, in order (empty for other modes)."""
    return [
        s["output"]["mode"]
        for s in record["steps"]
        if s["step"] in ("route", "escalate") and s.get("event") == "finished"
    ]


def add_mode_settings_option(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``--set KEY=VALUE`` of the reasoning benchmarks (:func:`mode_settings_of`)."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a mode setting for every mode that has it, e.g. focus_sentences=0 or "
        "comparison_mode=rewoo (repeatable; digits are a number)",
    )


def mode_settings_of(args: argparse.Namespace) -> dict[str, int | str]:
    """The mode settings ``--set`` gave, by key: a number where the value is digits."""
    settings: dict[str, int | str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        value = value.strip()
        if not sep or not key.strip() or not value:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. focus_sentences=0")
        settings[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return settings
