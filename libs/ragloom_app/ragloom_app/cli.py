"""The ``ragloom`` command: serve the UI, manage indices and ask questions.

Built on click, so that a plugin adds its own subcommands (the ``"cli"`` slots of
:data:`ragloom_app.plugins.slots.SLOTS`, see :mod:`ragloom_app.plugins.commands`). The
app and its heavy imports load only once a command runs, inside its handler.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from ragloom_app.cli_handlers import (
    _cmd_ask,
    _cmd_index_add,
    _cmd_index_check,
    _cmd_index_create,
    _cmd_index_delete,
    _cmd_index_list,
    _cmd_index_remove,
    _cmd_models,
    _cmd_modes,
    _cmd_plugins,
    _cmd_serve,
    _say,
    _start_app,
)
from ragloom_app.cli_jobs import jobs, worker
from ragloom_app.cli_transfer import _cmd_index_export, _cmd_index_import
from ragloom_app.cli_users import keys, users
from ragloom_app.privacy import switch_off_telemetry

__all__ = ["cli", "main"]

logger = logging.getLogger("ragloom")


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors a user can fix, told as ``ragloom: error: ...`` with exit status 2."""
    from ragloom.llms.base import LLMError
    from ragloom_app.errors import UserFacingError
    from ragloom_app.index.manager import UnknownIndexError
    from ragloom_app.pages.chat import UnknownModeError
    from ragloom_app.settings import SettingsError

    # AccountError is a ValueError: a name taken, a password too short.
    return (
        LLMError,
        SettingsError,
        UnknownIndexError,
        UnknownModeError,
        UserFacingError,
        ValueError,
    )


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
    root = click.get_current_context().find_root()
    args = argparse.Namespace(**root.params, **options)
    return _told(lambda: handler(_started(args, root.obj), args))


def _started(args: argparse.Namespace, notes: Any) -> Any:
    """The started app, its plugins' records noting what their commands replaced."""
    from ragloom_app.plugins.commands import note_command_warnings

    app = _start_app(args)
    note_command_warnings(app.plugins, notes or {})
    return app


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
    help="the address to listen on; any but loopback (127.0.0.1, ::1, localhost) turns login on",
)
# 0 ("any free port") is refused too: nothing uses it, and the URL printed would say :0.
@click.option("--port", type=click.IntRange(1, 65535), default=7860, show_default=True)
@click.option("--no-first-run-docs", is_flag=True, help="do not index the bundled docs")
def serve(host: str, port: int, no_first_run_docs: bool) -> int:
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


@index.command(name="export", help="write an index (files, chunks, vectors, settings) to a file")
@click.argument("name")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="replace FILE if it exists")
def index_export(name: str, file: Path, force: bool) -> int:
    return _run(_cmd_index_export, name=name, file=file, force=force)


@index.command(name="import", help="make an index from a file `ragloom index export` wrote")
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--name", help="the new index's name (default: the exported one's)")
@click.option("--owner", help="the user who owns it (default: the local user)")
@click.option(
    "--shared/--private",
    default=None,
    help="every user reads it / only its owner does (default: as the exported index was)",
)
def index_import(file: Path, name: str | None, owner: str | None, shared: bool | None) -> int:
    return _run(_cmd_index_import, file=file, name=name, owner=owner, shared=shared)


@index.command(name="delete", help="delete an index and all its files (asks first)")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="delete without asking")
def index_delete(name: str, yes: bool) -> int:
    return _run(_cmd_index_delete, name=name, yes=yes)


@cli.command(help="ask a question")
@click.argument("question")
@click.option("--mode", help="reasoning mode id (see `ragloom modes`)")
@click.option("--index", "indices", multiple=True, help="only this index (repeatable)")
@click.option(
    "--setting",
    "mode_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="a setting of the mode, e.g. top_k=5 or comparison_mode=rewoo (repeatable; "
    "`ragloom modes --show-settings` lists them)",
)
@click.option(
    "--index-setting",
    "index_settings",
    multiple=True,
    metavar="INDEX:KEY=VALUE",
    help="how one index searches, e.g. 'My files:retrieval_mode=vector' (repeatable; "
    "see docs/indices.md)",
)
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option(
    "--user",
    "user_name",
    help="ask as this user: only the indices it may read are searched (docs/users.md)",
)
def ask(
    question: str,
    mode: str | None,
    indices: tuple[str, ...],
    mode_settings: tuple[str, ...],
    index_settings: tuple[str, ...],
    as_json: bool,
    user_name: str | None,
) -> int:
    return _run(
        _cmd_ask,
        question=question,
        mode=mode,
        index=list(indices) or None,
        setting=list(mode_settings),
        index_setting=list(index_settings),
        json=as_json,
        user=user_name,
    )


@cli.command(help="list the reasoning modes")
@click.option(
    "--show-settings", "with_settings", is_flag=True, help="also list each mode's settings"
)
def modes(with_settings: bool) -> int:
    return _run(_cmd_modes, show_settings=with_settings)


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


cli.add_command(users)
cli.add_command(keys)
cli.add_command(jobs)
cli.add_command(worker)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from ragloom_app.plugins.commands import add_plugin_commands

    switch_off_telemetry()
    group = copy.copy(cli)  # the plugins' commands join a copy: `cli` stays as built
    group.commands = dict(cli.commands)
    notes = add_plugin_commands(group, argv)
    try:
        status = group.main(
            args=list(argv) if argv is not None else None,
            prog_name="ragloom",
            standalone_mode=False,
            obj=notes,  # the root context's: _run adds them to the plugins' records
        )
    except click.ClickException as exc:  # a usage error: as argparse did, status 2
        exc.show()
        return exc.exit_code
    except click.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    except Exception as exc:  # the last resort: a person reads words, never a traceback
        return _told_unforeseen(exc)
    return status if isinstance(status, int) else 0


def _told_unforeseen(exc: Exception) -> int:
    """Tell on stderr an error no command turned into words: the database out of reach
    (status 2: the person can mend it), or else any other in the words of
    :func:`~ragloom_app.errors.user_error` (status 1). Its words may hold what a person
    should not see (a path, an address): they and the trace are logged at ``DEBUG``,
    which ``--verbose`` shows, under the log reference the message gives."""
    from ragloom.postgres_outage import outage_words
    from ragloom_app.errors import user_error

    outage = outage_words(exc)
    if outage is not None:
        logger.debug("the database could not be reached", exc_info=exc)
        _say(
            f"ragloom: error: the database could not be reached ({outage}): is PostgreSQL "
            "running where DATABASE_URL (or RAGLOOM_DATABASE_URL) says?",
            file=sys.stderr,
        )
        return 2
    failure = user_error(exc, "The command", log=logger, level=logging.DEBUG)
    _say(f"ragloom: error: {failure.message}", file=sys.stderr)
    if not logger.isEnabledFor(logging.DEBUG):
        _say("ragloom: run it again with --verbose to log where it went wrong", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
