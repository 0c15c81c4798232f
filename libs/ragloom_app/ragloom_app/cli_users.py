"""``ragloom users ...`` and ``ragloom keys ...``: accounts and API keys from the command
line (an admin's tools; docs/users.md).

A password is prompted for (twice, not shown), or, for automation, read from the first
line of ``--password-file`` (``-`` for standard input) or from the environment variable
``--password-env`` names; it is never an argument, which would be left in the shell's
history and every process list.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["keys", "users"]


def _run(handler: Any, **options: Any) -> int:
    from ragloom_app.cli import _run as run_on_app

    return run_on_app(handler, **options)


def _password(args: argparse.Namespace) -> str:
    source, variable = args.password_file, args.password_env
    if source is not None and variable is not None:
        raise click.UsageError("give --password-file or --password-env, not both")
    if variable is not None:
        if variable not in os.environ:
            raise click.UsageError(f"the environment variable {variable!r} is not set")
        return os.environ[variable]
    if source is None:
        return str(click.prompt("Password", hide_input=True, confirmation_prompt=True))
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:  # no such file, a folder, no permission: the option is wrong
        why = exc.strerror or str(exc)
        raise click.UsageError(f"--password-file: cannot read {source!r}: {why}") from None
    lines = text.splitlines()
    return lines[0] if lines else ""


def _say(text: str) -> None:
    from ragloom_app.cli_handlers import _say as say

    say(text)


@click.group(help="manage user accounts (login: docs/users.md)")
def users() -> None:
    """``ragloom users ...``."""


def password_options(command: Any) -> Any:
    """``--password-file`` and ``--password-env``, for a command that sets a password."""

    @click.option(
        "--password-file",
        help="read the password from this file's first line (- for standard input)",
    )
    @click.option(
        "--password-env",
        metavar="VARIABLE",
        help="read the password from this environment variable",
    )
    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> Any:
        return command(*args, **kwargs)

    return with_options


@users.command(name="add", help="add a user (the password is prompted for)")
@click.argument("name")
@click.option("--admin", is_flag=True, help="may manage users and write shared indices")
@password_options
def users_add(name: str, admin: bool, password_file: str | None, password_env: str | None) -> int:
    return _run(
        _cmd_add, name=name, admin=admin, password_file=password_file, password_env=password_env
    )


def _cmd_add(app: Any, args: argparse.Namespace) -> int:
    user = app.accounts.add_user(args.name, _password(args), is_admin=args.admin)
    _say(f"added {'admin ' if user.is_admin else ''}user {user.name}")
    return 0


@users.command(name="list", help="list the users")
def users_list() -> int:
    return _run(_cmd_list)


def _cmd_list(app: Any, args: argparse.Namespace) -> int:
    for user, disabled in app.accounts.users():
        flags = [flag for flag, on in (("admin", user.is_admin), ("disabled", disabled)) if on]
        _say(f"{user.name}{'  (' + ', '.join(flags) + ')' if flags else ''}")
    return 0


@users.command(
    name="passwd", help="set a user's password (its sessions end, its API keys are revoked)"
)
@click.argument("name")
@password_options
def users_passwd(name: str, password_file: str | None, password_env: str | None) -> int:
    return _run(_cmd_passwd, name=name, password_file=password_file, password_env=password_env)


def _cmd_passwd(app: Any, args: argparse.Namespace) -> int:
    app.accounts.set_password(args.name, _password(args))
    _say(f"new password set for {args.name}; its sessions ended and its API keys were revoked")
    return 0


@users.command(name="disable", help="stop a user logging in (its sessions and keys stop)")
@click.argument("name")
def users_disable(name: str) -> int:
    return _run(_cmd_disabled, name=name, disabled=True)


@users.command(name="enable", help="let a disabled user log in again")
@click.argument("name")
def users_enable(name: str) -> int:
    return _run(_cmd_disabled, name=name, disabled=False)


def _cmd_disabled(app: Any, args: argparse.Namespace) -> int:
    app.accounts.set_disabled(args.name, args.disabled)
    _say(f"{args.name} {'disabled' if args.disabled else 'enabled'}")
    return 0


@users.command(
    name="delete",
    help="delete a user with its sessions, API keys, conversations and private indices "
    "(its shared indices stay, for their readers); asks first",
)
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="delete without asking")
def users_delete(name: str, yes: bool) -> int:
    return _run(_cmd_delete, name=name, yes=yes)


def _cmd_delete(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.accounts.removal import remove_user
    from ragloom_app.cli_handlers import _confirmed

    user = _named(app, args.name)  # an unknown name is told before anything is asked
    _confirmed(
        f"Delete the user {user.name} with its sessions, API keys, conversations and "
        "private indices?",
        args.yes,
    )
    _say(remove_user(app, args.name).summary())
    return 0


@click.group(help="manage a user's API keys (for the HTTP API and /v1)")
def keys() -> None:
    """``ragloom keys ...``."""


def _named(app: Any, name: str) -> Any:
    from ragloom_app.accounts import AccountError

    user = app.accounts.user_named(name)
    if user is None:
        raise AccountError(f"no user named {name!r}")
    return user


@keys.command(name="create", help="create an API key (shown this once)")
@click.option("--user", "user_name", required=True, help="whose key")
@click.option("--name", default="key", show_default=True, help="what the key is for")
def keys_create(user_name: str, name: str) -> int:
    return _run(_cmd_keys_create, user=user_name, name=name)


def _cmd_keys_create(app: Any, args: argparse.Namespace) -> int:
    info, key = app.accounts.create_key(_named(app, args.user), args.name)
    _say(f"API key {info.id} ({info.name}) of {args.user}; shown this once:")
    print(key)  # the key alone on its line, for a script to read
    return 0


@keys.command(name="list", help="list a user's API keys (never the keys themselves)")
@click.option("--user", "user_name", required=True)
def keys_list(user_name: str) -> int:
    return _run(_cmd_keys_list, user=user_name)


def _cmd_keys_list(app: Any, args: argparse.Namespace) -> int:
    for info in app.accounts.keys(_named(app, args.user)):
        used = info.last_used_at.isoformat(timespec="seconds") if info.last_used_at else "never"
        _say(f"{info.id}  {info.prefix}...  {info.name}  last used: {used}")
    return 0


@keys.command(name="revoke", help="revoke an API key")
@click.option("--user", "user_name", required=True)
@click.argument("key_id")
def keys_revoke(user_name: str, key_id: str) -> int:
    return _run(_cmd_keys_revoke, user=user_name, key_id=key_id)


def _cmd_keys_revoke(app: Any, args: argparse.Namespace) -> int:
    from ragloom_app.accounts import AccountError

    if not app.accounts.revoke_key(_named(app, args.user), args.key_id):
        raise AccountError(f"{args.user} has no API key {args.key_id!r}")
    _say(f"revoked {args.key_id}")
    return 0
