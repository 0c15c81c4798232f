"""An app with login on and named users, for tests of what each user may do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragloom_app.accounts import User
from ragloom_app.app import BaseApp
from tests.helpers.api_server import replay_app

PASSWORD = "correct horse battery"
"""Every test user's password."""


def app_with_users(folder: Path, *names: str, admin: str | None = None, **settings: Any) -> BaseApp:
    """A started replay app in ``folder`` with login on, the users ``names`` and, if
    given, the admin ``admin``; each with :data:`PASSWORD`. ``settings`` are further
    :class:`AppSettings` fields."""
    app = replay_app(folder, require_login=True, **settings)
    if admin is not None:
        app.accounts.add_user(admin, PASSWORD, is_admin=True)
    for name in names:
        app.accounts.add_user(name, PASSWORD)
    return app


def existing_user(app: BaseApp, name: str) -> User:
    """The user ``name``, who must exist."""
    user = app.accounts.user_named(name)
    assert user is not None, f"no user named {name!r}"
    return user
