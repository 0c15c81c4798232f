"""``ragloom users`` and ``ragloom keys`` as an admin runs them: passwords never as
arguments, keys shown once, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.conversations import ConversationStore
from ragloom_app.settings import AppSettings
from tests.helpers.cli import cli_env

PASSWORD = "correct horse battery"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    settings = tmp_path / "flowsettings.py"
    settings.write_text("INDICES = []\nFIRST_RUN_DOCS = None\n", encoding="utf-8")
    return cli_env(tmp_path / "data", settings)


def _ragloom(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom_app.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _app(env: dict[str, str]) -> BaseApp:
    """The app the CLI runs on with ``env``, started in this process."""
    settings = AppSettings.load(env["RAGLOOM_SETTINGS"])
    settings.data_dir = Path(env["RAGLOOM_DATA_DIR"])  # env's, not this process's
    return BaseApp(settings).start()


def test_an_admin_is_added_with_a_password_from_stdin_and_can_log_in(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    added = _ragloom(
        env, "users", "add", "alice", "--admin", "--password-file", "-", stdin=f"{PASSWORD}\n"
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "added admin user alice"
    assert _ragloom(env, "users", "list").stdout.strip() == "alice  (admin)"
    monkeypatch.setenv("RAGLOOM_DATA_DIR", env["RAGLOOM_DATA_DIR"])
    user, _ = _app(env).accounts.login("alice", PASSWORD)
    assert user.is_admin


def test_a_password_is_read_from_the_variable_named_never_from_an_argument(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_secret = {**env, "ADMIN_PASSWORD": PASSWORD}
    added = _ragloom(
        with_secret, "users", "add", "root", "--admin", "--password-env", "ADMIN_PASSWORD"
    )
    assert added.returncode == 0, added.stderr
    unset = _ragloom(env, "users", "passwd", "root", "--password-env", "NOT_SET_ANYWHERE")
    assert unset.returncode == 2 and "'NOT_SET_ANYWHERE' is not set" in unset.stderr
    both = ("--password-env", "ADMIN_PASSWORD", "--password-file", "-")
    refused = _ragloom(with_secret, "users", "passwd", "root", *both)
    assert refused.returncode == 2 and "not both" in refused.stderr
    assert PASSWORD not in added.stdout + added.stderr
    monkeypatch.setenv("RAGLOOM_DATA_DIR", env["RAGLOOM_DATA_DIR"])
    user, _ = _app(env).accounts.login("root", PASSWORD)
    assert user.is_admin


def test_a_key_is_printed_once_works_and_is_revoked(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _ragloom(env, "users", "add", "bob", "--password-file", "-", stdin=PASSWORD)
    created = _ragloom(env, "keys", "create", "--user", "bob", "--name", "ci")
    assert created.returncode == 0, created.stderr
    key = created.stdout.splitlines()[-1]
    key_id = created.stdout.split()[2]
    monkeypatch.setenv("RAGLOOM_DATA_DIR", env["RAGLOOM_DATA_DIR"])
    assert _app(env).accounts.key_user(key).name == "bob"  # type: ignore[union-attr]
    listed = _ragloom(env, "keys", "list", "--user", "bob").stdout
    assert key_id in listed and key not in listed and "last used:" in listed
    assert _ragloom(env, "keys", "revoke", "--user", "bob", key_id).returncode == 0
    assert _app(env).accounts.key_user(key) is None


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("users", "add", "carol", "--password-file", "-"), "short\n", "at least 8 characters"),
        (("users", "disable", "nobody"), "", "no user named 'nobody'"),
        (("keys", "create", "--user", "nobody"), "", "no user named 'nobody'"),
        (("keys", "revoke", "--user", "dave", "abc"), "", "dave has no API key 'abc'"),
        (
            ("users", "add", "carol", "--password-file", "/nonexistent/pw"),
            "",
            "Error: --password-file: cannot read '/nonexistent/pw': No such file or directory",
        ),
        (
            ("users", "passwd", "dave", "--password-file", "/"),
            "",
            "Error: --password-file: cannot read '/': Is a directory",
        ),
    ],
)
def test_mistakes_are_told_in_words_with_status_2(
    env: dict[str, str], args: tuple[str, ...], stdin: str, message: str
) -> None:
    _ragloom(env, "users", "add", "dave", "--password-file", "-", stdin=PASSWORD)
    told = _ragloom(env, *args, stdin=stdin)
    assert told.returncode == 2 and message in told.stderr and "Traceback" not in told.stderr


def test_ask_as_a_user_searches_only_what_that_user_may_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "flowsettings.py"
    settings.write_text(
        "INDICES = []\nFIRST_RUN_DOCS = None\n"
        'LLMS = {"replay": {"class": "ragloom.llms.replay.ReplayLLM",'
        ' "replies": ["It is in the passages [1]."]}}\nDEFAULT_LLM = "replay"\n'
        'EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}\n'
        'DEFAULT_EMBEDDING = "hash"\n',
        encoding="utf-8",
    )
    env = cli_env(tmp_path / "data", settings)
    monkeypatch.setenv("RAGLOOM_DATA_DIR", env["RAGLOOM_DATA_DIR"])
    app = _app(env)
    alice = app.accounts.add_user("alice", PASSWORD)
    app.accounts.add_user("bob", PASSWORD)
    private = app.indices.create(
        "vault", "ragloom_app.index.file.FileIndex", owner=alice.id, shared=False
    )
    secret = tmp_path / "vault.md"
    secret.write_text("The vault code is 7319.", encoding="utf-8")
    assert private.get_indexing_pipeline({}).run([secret])[0].status == "indexed"
    as_alice = _ragloom(env, "ask", "What is the vault code?", "--user", "alice", "--json")
    assert "7319" in as_alice.stdout, as_alice.stderr
    as_bob = _ragloom(env, "ask", "What is the vault code?", "--user", "bob", "--json")
    assert as_bob.returncode == 0 and "7319" not in as_bob.stdout
    refused = _ragloom(env, "ask", "What?", "--user", "bob", "--index", "vault")
    assert refused.returncode == 2 and "no index named 'vault'" in refused.stderr
    assert "no user named 'eve'" in _ragloom(env, "ask", "What?", "--user", "eve").stderr


def test_users_delete_removes_what_is_the_users_alone_and_says_what(
    env: dict[str, str], tmp_path: Path
) -> None:
    app = _app(env)
    bob = app.accounts.add_user("bob", PASSWORD)
    notes = app.indices.create(
        "bobs-notes", "ragloom_app.index.file.FileIndex", owner=bob.id, shared=False
    )
    ConversationStore(app.engine).create(owner=bob.id)
    unasked = _ragloom(env, "users", "delete", "bob")  # stdin is no terminal to ask on
    assert unasked.returncode == 2 and "pass --yes to delete the user bob" in unasked.stderr
    assert _app(env).accounts.user_named("bob") is not None
    deleted = _ragloom(env, "users", "delete", "bob", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == (
        "Deleted bob, with 1 conversation and 1 private index ('bobs-notes')."
    )
    app = _app(env)
    assert app.accounts.user_named("bob") is None
    assert notes.name not in {index.name for index in app.indices.indices}
    again = _ragloom(env, "users", "delete", "bob", "--yes")
    assert again.returncode == 2 and "no user named 'bob'" in again.stderr
