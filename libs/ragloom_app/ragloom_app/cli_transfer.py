"""``ragloom index export`` and ``ragloom index import``: an index to a file and back
(:mod:`ragloom_app.index.file.transfer`), given the started app and the options."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragloom_app.cli_handlers import _say, _user_id
from ragloom_app.stop_signals import StopRequested, stop_signals_raise


def _embedding_identity(app: Any) -> dict[str, Any]:
    from ragloom_app.index.file.transfer import embedding_identity

    spec = app.embedding_specs[app.settings.default_embedding]  # a plugin's too
    return embedding_identity(spec, app.embeddings().dimension)


def _identity_of(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (its device and inode), or ``None`` if there is none: an
    export is renamed into place, so a new one has another inode."""
    try:
        found = path.lstat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _cmd_index_export(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.file import FileIndex
    from ragloom_app.index.file.transfer import export_index

    index = app.indices.get(args.name)
    if not isinstance(index, FileIndex):
        raise ValueError(f"{index.name!r} is not a file index: only file indices export")
    target = Path(args.file)
    before = _identity_of(target)
    try:
        # SIGTERM or SIGHUP ended it at once, leaving its work folder of every chunk's
        # text beside the target: now they stop it as Ctrl-C does, and it cleans up.
        with stop_signals_raise():
            report = export_index(index, target, _embedding_identity(app), overwrite=args.force)
    except StopRequested as stop:
        # A stop during the clean-up after the export was put in place comes once it ends.
        written = _identity_of(target) not in (None, before)
        told = f"{str(target)!r} was written whole" if written else "no file was written"
        _say(f"ragloom: the export was stopped ({stop}): {told}", file=sys.stderr)
        return 128 + stop.number  # what a shell reports for a process the signal ended
    left = f"; {report.skipped} files not indexed were left out" if report.skipped else ""
    _say(f"exported {report.index!r}: {report.sources} files, {report.chunks} chunks{left}")
    return 0


def _cmd_index_import(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.file.transfer import import_index

    type_id = app.settings.index_types[0]
    try:
        with stop_signals_raise():
            index, report = import_index(
                app.indices,
                Path(args.file),
                _embedding_identity(app),
                type_id=type_id,
                name=args.name,
                owner=_user_id(app, args.owner),
                shared=args.shared,
            )
    except StopRequested as stop:
        _say(
            f"ragloom: the import was stopped ({stop}): the index it had begun is deleted",
            file=sys.stderr,
        )
        return 128 + stop.number  # what a shell reports for a process the signal ended
    for warning in report.warnings:
        _say(f"  warning: {warning}")
    who = (
        "shared"
        if app.indices.access(index).shared
        else f"private to {args.owner or 'the local user'}"
    )
    _say(f"imported {index.name!r} ({who}): {report.sources} files, {report.chunks} chunks")
    return 0
