"""``ragloom index export`` and ``ragloom index import``: an index to a file and back
(:mod:`ragloom_app.index.file.transfer`), given the started app and the options."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from ragloom_app.cli_handlers import _say, _user_id

#: What stops an import as Ctrl-C does: `docker stop`, systemd, a closed ssh session.
_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _Stopped(BaseException):
    """A stop signal arrived while an import ran. A BaseException, as KeyboardInterrupt
    is: nothing that catches ``Exception`` on the way swallows it."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = number


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`_Stopped` in the main thread, so
    the import's clean-up (deleting the half-made index) runs before the process ends;
    their default would end it at once, leaving that index behind. The handlers are
    given back on exit. A signal ignored (``nohup``) stays ignored; off the main thread
    (where no handler can be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def stop(number: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:  # a second one while the clean-up runs: let it finish
            return
        stopping = True
        raise _Stopped(number)

    previous = {}
    for number in _STOP_SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            # None: a handler set outside Python, which cannot be set again; the default.
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def _embedding_identity(app: Any) -> dict[str, Any]:
    from ragloom_app.index.file.transfer import embedding_identity

    spec = app.embedding_specs[app.settings.default_embedding]  # a plugin's too
    return embedding_identity(spec, app.embeddings().dimension)


def _cmd_index_export(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.file import FileIndex
    from ragloom_app.index.file.transfer import export_index

    index = app.indices.get(args.name)
    if not isinstance(index, FileIndex):
        raise ValueError(f"{index.name!r} is not a file index: only file indices export")
    report = export_index(index, Path(args.file), _embedding_identity(app), overwrite=args.force)
    left = f"; {report.skipped} files not indexed were left out" if report.skipped else ""
    _say(f"exported {report.index!r}: {report.sources} files, {report.chunks} chunks{left}")
    return 0


def _cmd_index_import(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.index.file.transfer import import_index

    type_id = app.settings.index_types[0]
    try:
        with _stop_signals_raise():
            index, report = import_index(
                app.indices,
                Path(args.file),
                _embedding_identity(app),
                type_id=type_id,
                name=args.name,
                owner=_user_id(app, args.owner),
                shared=args.shared,
            )
    except _Stopped as stop:
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
