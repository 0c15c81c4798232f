"""The ``ragloom`` command's parsing on click: usage errors, help, and its exit statuses."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from ragloom_app import cli
from tests.helpers.fresh_interpreter import printed_by


def test_help_lists_every_command_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    shown = capsys.readouterr().out
    for command in ("serve", "index", "ask", "modes", "plugins", "models"):
        assert f"  {command} " in shown
    assert cli.main(["index", "-h"]) == 0
    assert "add " in capsys.readouterr().out


def test_help_imports_no_store_or_model_library() -> None:
    # The plugin commands build an app (not started) to ask the plugins' other hooks;
    # that must not load chromadb (~1 s) or a model library for a command that uses none.
    shown = printed_by(
        """
        import contextlib, io, sys
        from ragloom_app import cli
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main(["--help"])
        print(sorted(m for m in ("chromadb", "torch", "llama_cpp", "gradio") if m in sys.modules))
        """
    )
    assert shown.strip() == "[]"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["teleport"], "No such command 'teleport'"),
        (["index", "add"], "Missing argument 'PATHS...'"),
        (["serve", "--port", "many"], "'many' is not a valid integer"),
        (["ask", "why?", "--colour"], "No such option '--colour'"),
    ],
)
def test_a_usage_error_says_what_is_wrong_and_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("port", ["0", "65536", "99999", "-1"])
def test_serve_takes_only_a_port_a_server_can_listen_on(
    port: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """99999 was taken and wrapped to 34463; 0 served on a port the system picked while
    saying ":0/"."""
    monkeypatch.setattr(cli, "_run", lambda handler, **options: 0)  # never serves
    assert cli.main(["serve", "--port", port]) == 2
    assert f"{port} is not in the range 1<=x<=65535" in capsys.readouterr().err


def test_serve_on_a_public_host_needs_an_account_to_log_in_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "data"))
    assert cli.main(["serve", "--host", "0.0.0.0", "--no-first-run-docs"]) == 2
    error = capsys.readouterr().err
    assert "ragloom: error: serving on '0.0.0.0' requires login" in error
    assert "ragloom users add NAME --admin" in error


def test_the_built_in_group_is_not_changed_by_a_run() -> None:
    before = dict(cli.cli.commands)
    assert cli.main(["--help"]) == 0
    assert cli.cli.commands == before


def test_an_error_nobody_foresaw_is_told_with_a_log_reference_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its words may hold what a person should not see (a path, an address): the kind
    of error is told, and the trace is logged (shown with --verbose) under the reference."""
    told = (
        r"ragloom: error: The command failed: something unexpected went wrong inside "
        r"Ragloom \(log reference ([0-9a-f]{8})\)\n"
    )

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("the token at /srv/secret/key was refused")

    monkeypatch.setattr(cli, "_run", broken)
    assert cli.main(["index", "list"]) == 1
    error = capsys.readouterr().err
    hint = "ragloom: run it again with --verbose to log where it went wrong\n"
    assert re.fullmatch(told + re.escape(hint), error), error
    with caplog.at_level(logging.DEBUG, logger="ragloom"):  # as --verbose logs
        assert cli.main(["index", "list"]) == 1
    message = re.fullmatch(told, capsys.readouterr().err)
    assert message is not None
    (record,) = [r for r in caplog.records if message.group(1) in r.getMessage()]
    assert record.exc_info is not None and "/srv/secret" in str(record.exc_info[1])


def test_a_database_that_cannot_be_reached_is_said_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGLOOM_DATABASE_URL", "postgresql+psycopg://nobody@127.0.0.1:1/x")
    assert cli.main(["index", "list"]) == 2
    assert capsys.readouterr().err == (
        "ragloom: error: the database could not be reached (the connection was refused or "
        "broke off): is PostgreSQL running where DATABASE_URL (or RAGLOOM_DATABASE_URL) "
        "says?\n"
    )
