"""The ``ragloom`` command's parsing on click: usage errors, help, and its exit statuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom_app import cli


def test_help_lists_every_command_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    shown = capsys.readouterr().out
    for command in ("serve", "index", "ask", "modes", "plugins", "models"):
        assert f"  {command} " in shown
    assert cli.main(["index", "-h"]) == 0
    assert "add " in capsys.readouterr().out


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
