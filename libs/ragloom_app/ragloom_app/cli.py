"""The ``ragloom`` command: serve the UI, manage indices and ask questions.

Built on click, so that a plugin adds its own subcommands (the ``"cli"`` slots of
:data:`ragloom_app.plugins.slots.SLOTS`, see :mod:`ragloom_app.plugins.commands`). The
app and its heavy imports load only once a command runs, inside its handler.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import click

from ragloom_app.privacy import switch_off_telemetry

__all__ = ["cli", "main"]

logger = logging.getLogger("ragloom")


def _say(text: str, *, file: TextIO | None = None) -> None:
    """Print a line for a person: file names, reasons and messages can come from a
    document, so no terminal control sequence in them reaches the terminal."""
    from ragloom_app.terminal import terminal_text

    print(terminal_text(text), file=file)


def _start_app(args: argparse.Namespace) -> Any:
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    return BaseApp(AppSettings.load(args.settings)).start()


def _expand(paths: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file()))
        else:
            files.append(path)
    return files


def _cmd_index_add(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.base import FileOutcome, IndexingProgress

    index = app.indices.get(args.index) if args.index else app.indices.indices[0]
    outcomes: list[FileOutcome] = []
    pipeline = index.get_indexing_pipeline({})
    for event in pipeline.stream(_expand(args.paths), reindex=args.reindex):
        if isinstance(event, IndexingProgress):
            _say(f"[{event.fraction:4.0%}] {event.name}: {event.message}", file=sys.stderr)
        else:
            outcomes.append(event)
            if not args.json:
                detail = f"{event.chunks} chunks" if event.status != "failed" else ""
                reason = f" ({event.reason})" if event.reason else ""
                _say(f"{event.status:8} {event.name} {detail}{reason}".rstrip())
    if args.json:
        print(json.dumps({"index": index.name, "files": [o.to_dict() for o in outcomes]}))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _cmd_index_list(app: Any, args: argparse.Namespace) -> int:
    data = [
        {
            "name": i.name,
            "id": i.id,
            "type": type(i).__name__,
            "unavailable": None,
            "files": i.list_sources(),
        }
        for i in app.indices.indices
    ]
    # Indices left out at start (a type that failed or is gone) are listed with why; their
    # files are not read (None), which is not "no files" ([]).
    left_out = [
        {"name": name, "id": None, "type": None, "unavailable": reason, "files": None}
        for name, reason in app.indices.unavailable.items()
    ]
    if args.json:
        print(json.dumps(data + left_out, default=str))
        return 0
    for entry in left_out:
        _say(f"{entry['name']} (unavailable: {entry['unavailable']})")
    for entry in data:
        _say(f"{entry['name']} ({entry['type']}, {len(entry['files'])} files)")
        for f in entry["files"]:
            reason = f": {f['reason']}" if f["reason"] else ""
            _say(f"  {f['status']:8} {f['name']} ({f['chunks']} chunks){reason}")
    return 0


def _cmd_index_remove(app: Any, args: argparse.Namespace) -> int:
    index = app.indices.get(args.index) if args.index else app.indices.indices[0]
    missing = [name for name in args.files if not index.remove_source(name)]
    for name in missing:
        _say(f"not in {index.name!r}: {name}", file=sys.stderr)
    return 1 if missing else 0


def _create_config(
    index_type: Any, args: argparse.Namespace, readers: Mapping[str, Any]
) -> dict[str, Any]:
    """The config of a new index from the options given, checked by its type and readers."""
    config: dict[str, Any] = {}
    if args.chunk_size is not None:
        config["chunk_size"] = args.chunk_size
    if args.chunk_overlap is not None:
        config["chunk_overlap"] = args.chunk_overlap
    if args.extensions is not None:
        parts = [e.strip().lower() for e in args.extensions.split(",") if e.strip()]
        config["extensions"] = [e if e.startswith(".") else f".{e}" for e in parts]
    known = index_type.admin_settings_for(readers)
    for key in config:
        if key not in known:
            option = "--" + key.replace("_", "-")
            raise ValueError(f"{option}: index type {index_type.__name__} has no such setting")
    # The type's own check, so a bad value fails here, not later.
    return dict(index_type.normalize_config(config, readers=readers))


def _cmd_index_create(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.settings import SettingsError

    type_id = args.type or app.settings.index_types[0]
    index_type = app.indices.index_types.get(type_id)
    if index_type is None:
        known = ", ".join(app.indices.index_types)
        raise SettingsError(f"unknown index type {type_id!r} (known: {known})")
    config = _create_config(index_type, args, app.indices.readers)
    index = app.indices.create(args.name, type_id, config)
    shown = ", ".join(
        f"{key}={','.join(map(str, v)) if isinstance(v, list) else v}"
        for key, v in index.config.items()
    )
    _say(f"created index {index.name!r}" + (f": {shown}" if shown else ""))
    return 0


def _cmd_index_check(app: Any, args: argparse.Namespace) -> int:
    indices = [app.indices.get(args.index)] if args.index else app.indices.indices
    reports = [index.check(repair=args.repair) for index in indices]
    ok = all(report.ok for report in reports)
    if args.json:
        print(json.dumps({"ok": ok, "indices": [r.to_dict() for r in reports]}))
        return 0 if ok else 1
    for report in reports:
        counts = report.counts
        summary = (
            f"{counts.get('sources', 0)} files, {counts.get('chunks', 0)} chunks; "
            + ", ".join(f"{k} {v}" for k, v in counts.items() if k not in {"sources", "chunks"})
        )
        if report.clean:
            _say(f"{report.index}: clean ({summary})")
        else:
            state = "all repaired" if report.ok else "problems remain"
            _say(f"{report.index}: {len(report.problems)} problems, {state} ({summary})")
        for problem in report.problems:
            where = f" [{problem.store}]" if problem.store else ""
            fixed = " (repaired)" if problem.repaired else ""
            _say(f"  {problem.kind}{where}: {problem.message}{fixed}")
        for note in report.notes:
            _say(f"  note: {note}")
    if not ok and not args.repair:
        print("run `ragloom index check --repair` to fix them", file=sys.stderr)
    return 0 if ok else 1


def _cmd_ask(app: Any, args: argparse.Namespace) -> int:
    from ragloom.events import AnswerDelta, AnswerRevised
    from ragloom_app.pages.chat import AnswerFinished, ChatPage
    from ragloom_app.terminal import terminal_text

    record: dict[str, Any] = {}
    revised = False
    for event in ChatPage(app).ask(args.question, mode=args.mode, indices=args.index):
        if isinstance(event, AnswerFinished):
            record = event.record
        elif isinstance(event, AnswerRevised):
            revised = True
        elif isinstance(event, AnswerDelta) and not args.json:
            # Document text the model repeats may hold escape sequences: none reach the
            # terminal (--json escapes them as \u001b and the like).
            print(terminal_text(event.text), end="", flush=True)
    if args.json:
        print(json.dumps(record, default=str))
        return 0
    print()
    if revised:
        # The streamed text had sentences without [n]; show the cited version too.
        print(f"\nWith citations: {terminal_text(record['answer'])}")
    for citation in record.get("citations", []):
        page = f", page {citation['page']}" if citation["page"] else ""
        snippet = " ".join(terminal_text(citation["text"]).split())[:160]
        print(terminal_text(f"[{citation['number']}] {citation['source']}{page}: ") + snippet)
    return 0


def _cmd_modes(app: Any, args: argparse.Namespace) -> int:
    for mode_id, cls in app.reasonings.items():
        print(f"{mode_id:12} {cls.get_info().description}")
    return 0


def _cmd_index_delete(app: Any, args: argparse.Namespace) -> int:
    app.indices.delete(args.name)
    return 0


def _cmd_plugins(app: Any, args: argparse.Namespace) -> int:
    infos = (list(app.builtin_plugins) if args.all else []) + list(app.plugins)
    if args.json:
        print(json.dumps([info.to_dict() for info in infos]))
        return 0
    if not infos:
        print("No plugins installed (see docs/plugins.md).")
    for info in infos:
        state = " (disabled)" if info.disabled else ""
        _say(f"{info.name} {info.version or ''}{state}".rstrip())
        for kind, ids in info.registered.items():
            if ids:
                _say(f"  {kind.replace('_', ' ')}: {', '.join(ids)}")
        if info.error:
            _say(f"  error: {info.error}")
        for warning in info.warnings:
            _say(f"  warning: {warning}")
    return 0


def _cmd_serve(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.ui.server import serve

    try:
        serve(
            app,
            host=args.host,
            port=args.port,
            first_run_docs=not args.no_first_run_docs,
            on_listening=lambda url: print(f"Ragloom is at {url} (Ctrl-C stops it)", flush=True),
        )
    except OSError as exc:  # the port is taken: uvicorn has logged the details
        _say(f"ragloom: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_models() -> int:
    from ragloom.embeddings.bundled import bundled_model_path as bundled_embedding_path
    from ragloom.models import bundled_llm

    path = bundled_llm.bundled_model_path()
    print(
        f"LLM: {bundled_llm.MODEL_NAME} {bundled_llm.MODEL_QUANTIZATION} "
        f"({bundled_llm.MODEL_LICENSE}), verified sha256, at {path}"
    )
    print(f"Embeddings: all-MiniLM-L6-v2 at {bundled_embedding_path()}")
    return 0


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors a user can fix, told as ``ragloom: error: ...`` with exit status 2."""
    from ragloom.llms.base import LLMError
    from ragloom_app.index.manager import UnknownIndexError
    from ragloom_app.pages.chat import UnknownModeError
    from ragloom_app.settings import SettingsError

    return (LLMError, SettingsError, UnknownIndexError, UnknownModeError, ValueError)


def _told(call: Callable[[], int]) -> int:
    """``call()``, with a user's error told on stderr (status 2) instead of raised."""
    errors = _user_errors()
    try:
        return call()
    except errors as exc:
        _say(f"ragloom: error: {exc}", file=sys.stderr)
        return 2


def _run(handler: Callable[[Any, argparse.Namespace], int], **options: Any) -> int:
    """Start the app of the ``--settings`` given and run one command's handler on it.

    The handler gets the options as an ``argparse.Namespace`` (``args.json``...), the
    root's ``--settings`` and ``--verbose`` among them.
    """
    args = argparse.Namespace(**click.get_current_context().find_root().params, **options)
    return _told(lambda: handler(_start_app(args), args))


@click.group(
    name="ragloom",
    help="Chat with your documents, offline.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--settings", help="settings file (default: ./flowsettings.py)")
@click.option("-v", "--verbose", is_flag=True, help="log more")
def cli(settings: str | None, verbose: bool) -> None:
    """The ``ragloom`` command group: plugins add theirs (docs/plugins.md)."""
    level = logging.DEBUG if verbose else os.environ.get("RAGLOOM_LOG_LEVEL", "WARNING")
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


@cli.command(help="start the web UI")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="a loopback address (127.0.0.1, ::1, localhost): there is no login yet",
)
@click.option("--port", type=int, default=7860, show_default=True)
@click.option("--no-first-run-docs", is_flag=True, help="do not index the bundled docs")
def serve(host: str, port: int, no_first_run_docs: bool) -> int:
    from ragloom_app.web.hosts import check_serving_host

    def check_host() -> int:
        check_serving_host(host)  # before the app opens anything
        return 0

    if _told(check_host):
        return 2
    return _run(_cmd_serve, host=host, port=port, no_first_run_docs=no_first_run_docs)


@cli.group(help="manage indices and their files")
def index() -> None:
    """``ragloom index ...``."""


@index.command(name="add", help="add files (or folders) to an index")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--index", "index_name", help="index name (default: the first index)")
@click.option("--reindex", is_flag=True, help="index again even if unchanged")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def index_add(paths: tuple[Path, ...], index_name: str | None, reindex: bool, as_json: bool) -> int:
    return _run(_cmd_index_add, paths=list(paths), index=index_name, reindex=reindex, json=as_json)


@index.command(name="list", help="list indices and their files")
@click.option("--json", "as_json", is_flag=True)
def index_list(as_json: bool) -> int:
    return _run(_cmd_index_list, json=as_json)


@index.command(name="remove", help="remove files from an index")
@click.argument("files", nargs=-1, required=True)
@click.option("--index", "index_name", help="index name (default: the first index)")
def index_remove(files: tuple[str, ...], index_name: str | None) -> int:
    return _run(_cmd_index_remove, files=list(files), index=index_name)


@index.command(name="create", help="create an index")
@click.argument("name")
@click.option("--type", "type_", help="index type (default: the first of INDEX_TYPES)")
@click.option("--chunk-size", type=int, help="tokens per chunk")
@click.option("--chunk-overlap", type=int, help="tokens shared by neighbouring chunks")
@click.option("--extensions", help="file types it takes, comma-separated: .md,.pdf")
def index_create(
    name: str,
    type_: str | None,
    chunk_size: int | None,
    chunk_overlap: int | None,
    extensions: str | None,
) -> int:
    return _run(
        _cmd_index_create,
        name=name,
        type=type_,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        extensions=extensions,
    )


@index.command(name="check", help="verify that the database and the stores agree (and repair them)")
@click.option("--index", "index_name", help="only this index (default: every index)")
@click.option("--repair", is_flag=True, help="fix what does not agree")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def index_check(index_name: str | None, repair: bool, as_json: bool) -> int:
    return _run(_cmd_index_check, index=index_name, repair=repair, json=as_json)


@index.command(name="delete", help="delete an index and all its files")
@click.argument("name")
def index_delete(name: str) -> int:
    return _run(_cmd_index_delete, name=name)


@cli.command(help="ask a question")
@click.argument("question")
@click.option("--mode", help="reasoning mode id (see `ragloom modes`)")
@click.option("--index", "indices", multiple=True, help="only this index (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def ask(question: str, mode: str | None, indices: tuple[str, ...], as_json: bool) -> int:
    return _run(_cmd_ask, question=question, mode=mode, index=list(indices) or None, json=as_json)


@cli.command(help="list the reasoning modes")
def modes() -> int:
    return _run(_cmd_modes)


@cli.command(help="list the installed plugins and what each registered")
@click.option("--json", "as_json", is_flag=True, help="print one JSON list")
@click.option("--all", "everything", is_flag=True, help="also list what Ragloom itself registers")
def plugins(as_json: bool, everything: bool) -> int:
    return _run(_cmd_plugins, json=as_json, all=everything)


@cli.command(
    help="prepare the bundled models (join and verify) and show where they are",
    short_help="prepare the bundled models (join and verify) and show where they are",
)
def models() -> int:
    return _told(_cmd_models)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from ragloom_app.plugins.commands import add_plugin_commands

    switch_off_telemetry()
    group = copy.copy(cli)  # the plugins' commands join a copy: `cli` stays as built
    group.commands = dict(cli.commands)
    add_plugin_commands(group, argv)
    try:
        status = group.main(
            args=list(argv) if argv is not None else None,
            prog_name="ragloom",
            standalone_mode=False,
        )
    except click.ClickException as exc:  # a usage error: as argparse did, status 2
        exc.show()
        return exc.exit_code
    except click.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    return status if isinstance(status, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
