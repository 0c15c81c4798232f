"""The header's login bar and the Account tab: the user's API keys, and for an admin the
users (create, disable and enable, reset a password, delete).

Without login (the laptop's local user) there is no account: the bar is empty and the tab
hidden. Every handler checks who asks again on the server: the tab being hidden is not
what keeps a user out of the admin's actions. An admin manages accounts; it never reads
another user's conversations or private files through them.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ragloom_app.accounts import AccountError, User
from ragloom_app.accounts.removal import remove_user
from ragloom_app.api.auth import LOCAL, SESSION_COOKIE
from ragloom_app.app import BaseApp
from ragloom_app.ui import notify, render
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.model_text import literal_markdown
from ragloom_app.web.login import logout_token

__all__ = ["AccountHandlers", "AccountTab", "build_account_tab", "login_bar_html"]

logger = logging.getLogger(__name__)


def login_bar_html(user: User, session_token: str | None) -> str:
    """Who is logged in, and a logout button (a form with its anti-forgery token)."""
    if user is LOCAL or not session_token:
        return ""
    role = " (admin)" if user.is_admin else ""
    return (
        '<form class="rl-login-bar" method="post" action="/logout">'
        f'<span>Logged in as <strong id="logged-in-user">{html.escape(user.name)}</strong>'
        f"{role}</span>"
        f'<input type="hidden" name="csrf" value="{logout_token(session_token)}">'
        '<button type="submit" id="logout">Log out</button></form>'
    )


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment is not None else "never"


class AccountHandlers:
    """What the Account tab's events do; every method returns values for gradio outputs."""

    def __init__(self, app: BaseApp) -> None:
        self.app = app

    def _account(self, request: gr.Request | None) -> User:
        user = ui_user(self.app, request)
        if user is LOCAL:
            raise notify.error("There are no accounts without login (REQUIRE_LOGIN).")
        return user

    def _admin(self, request: gr.Request | None) -> User:
        user = self._account(request)
        if not user.is_admin:
            raise notify.error("Only an admin manages users.")
        return user

    # -- the page --------------------------------------------------------------------------
    def on_load(self, request: gr.Request | None = None) -> tuple[Any, Any, Any, str, str]:
        """The login bar, the tab and the admin section shown to whom they concern, and
        the tables."""
        user = ui_user(self.app, request)
        token = request.cookies.get(SESSION_COOKIE) if request is not None else None
        bar = login_bar_html(user, token)
        if user is LOCAL:
            return bar, gr.update(visible=False), gr.update(visible=False), "", ""
        users = self.users_table(request) if user.is_admin else ""
        return (
            bar,
            gr.update(visible=True),
            gr.update(visible=user.is_admin),
            self.keys_table(request),
            users,
        )

    # -- API keys ---------------------------------------------------------------------------
    def keys_table(self, request: gr.Request | None = None) -> str:
        """The user's API keys (never the keys themselves)."""
        keys = self.app.accounts.keys(self._account(request))
        rows = [
            [
                html.escape(k.id),
                html.escape(k.name),
                html.escape(k.prefix) + "…",
                _when(k.created_at),
                _when(k.last_used_at),
            ]
            for k in keys
        ]
        headers = ["Id", "Name", "Starts with", "Created", "Last used"]
        return render.table_html(headers, rows, "No API key yet.")

    def create_key(
        self, name: str | None, request: gr.Request | None = None
    ) -> tuple[str, str, Any]:
        """A new key, shown this once; the table; the name box emptied."""
        user = self._account(request)
        try:
            info, key = self.app.accounts.create_key(user, name or "key")
        except AccountError as exc:
            raise notify.error(str(exc)) from exc
        logger.info("UI: %s created the API key %s", user.name, info.id)
        shown = (
            '<div class="rl-new-key">Your new key (it is shown this once: copy it now):'
            f'<code id="new-api-key">{html.escape(key)}</code></div>'
        )
        return shown, self.keys_table(request), gr.update(value="")

    def revoke_key(self, key_id: str | None, request: gr.Request | None = None) -> tuple[str, Any]:
        """Revoke one of the user's keys by its id; the table."""
        user = self._account(request)
        if not self.app.accounts.revoke_key(user, (key_id or "").strip()):
            notify.warn("You have no API key of that id.")
            return self.keys_table(request), gr.skip()
        return self.keys_table(request), gr.update(value="")

    # -- users (admins) ---------------------------------------------------------------------
    def users_table(self, request: gr.Request | None = None) -> str:
        """Every account: its name, role and whether it is disabled."""
        self._admin(request)
        rows = [
            [
                html.escape(user.name),
                "admin" if user.is_admin else "user",
                "disabled" if disabled else "active",
            ]
            for user, disabled in self.app.accounts.users()
        ]
        return render.table_html(["Name", "Role", "Status"], rows, "No users.")

    def act(
        self,
        action: str | None,
        name: str | None,
        password: str | None,
        is_admin: bool,
        request: gr.Request | None = None,
    ) -> tuple[str, str, Any]:
        """Run one admin action on the user ``name``; the status (Markdown, in which names
        and errors show as written), the table, the password box emptied (a password never
        stays in the page)."""
        admin = self._admin(request)
        name = (name or "").strip()
        shown = literal_markdown(name)  # a user's name may be www.example.org: no link
        store = self.app.accounts
        try:
            if not name:
                raise AccountError("type the user's name")
            if action == "add":
                store.add_user(name, password or "", is_admin=is_admin)
                done = f"Added {shown}."
            elif action == "password":
                store.set_password(name, password or "")
                done = f"Set a new password for {shown}; its sessions ended, its API keys revoked."
            elif action in ("disable", "enable", "delete") and name == admin.name:
                raise AccountError("an admin cannot disable or delete itself here")
            elif action == "disable":
                store.set_disabled(name, True)
                done = f"Disabled {shown}: its sessions ended and its keys stopped working."
            elif action == "enable":
                store.set_disabled(name, False)
                done = f"Enabled {shown}."
            elif action == "delete":
                # It names the user's indices, whatever their names hold.
                done = literal_markdown(remove_user(self.app, name).summary())
            else:
                raise AccountError("choose an action")
        except AccountError as exc:
            notify.warn(str(exc))
            return literal_markdown(str(exc)), self.users_table(request), gr.update(value="")
        logger.info("UI: admin %s: %s %s", admin.name, action, name)
        return done, self.users_table(request), gr.update(value="")


@dataclass
class AccountTab:
    """The components of the login bar and the Account tab (for wiring and tests)."""

    login_bar: gr.HTML
    tab: gr.Tab
    admin: gr.Group
    keys: gr.HTML
    users: gr.HTML
    handlers: AccountHandlers


_ACTIONS = [
    ("Add the user", "add"),
    ("Set its password", "password"),
    ("Disable it", "disable"),
    ("Enable it", "enable"),
    ("Delete it", "delete"),
]


def build_account_tab(demo: gr.Blocks, app: BaseApp, login_bar: gr.HTML) -> AccountTab:
    """Lay out the Account tab (in the current ``gr.Tabs``, hidden until the page loads
    for a logged-in user) and wire it and the header's ``login_bar``."""
    handlers = AccountHandlers(app)
    with gr.Tab("Account", id="account", elem_id="tab-account", visible=False) as tab:
        gr.Markdown("### API keys", elem_classes="rl-panel-title")
        gr.Markdown(
            "A key lets a program act for you through the HTTP API and the OpenAI-compatible "
            "endpoint (`Authorization: Bearer rlk_…`). It is stored hashed: copy it when it "
            "is shown."
        )
        with gr.Row(equal_height=True):
            key_name = gr.Textbox(label="Key name", max_lines=1, max_length=80, elem_id="key-name")
            create = gr.Button("Create key", variant="primary", elem_id="create-key", scale=0)
        new_key = gr.HTML("", elem_id="new-key")
        keys = gr.HTML("", elem_id="key-table")
        with gr.Row(equal_height=True):
            key_id = gr.Textbox(label="Key id to revoke", max_lines=1, max_length=40)
            revoke = gr.Button("Revoke", variant="stop", elem_id="revoke-key", scale=0)
        with gr.Group(visible=False, elem_id="admin-users") as admin:
            gr.Markdown("### Users (admin)", elem_classes="rl-panel-title")
            users = gr.HTML("", elem_id="user-table")
            with gr.Row(equal_height=True):
                name = gr.Textbox(
                    label="User name", max_lines=1, max_length=64, elem_id="user-name"
                )
                password = gr.Textbox(
                    label="Password (to add or reset)",
                    type="password",
                    max_lines=1,
                    max_length=1024,
                    elem_id="user-password",
                )
                is_admin = gr.Checkbox(label="Admin", value=False, elem_id="user-admin")
            with gr.Row(equal_height=True):
                action = gr.Dropdown(
                    choices=_ACTIONS, value="add", label="Action", filterable=False
                )
                run = gr.Button("Apply", variant="primary", elem_id="user-apply", scale=0)
            status = gr.Markdown("", elem_id="user-status")

    create.click(
        handlers.create_key,
        inputs=key_name,
        outputs=[new_key, keys, key_name],
        api_visibility="private",
    )
    revoke.click(
        handlers.revoke_key, inputs=key_id, outputs=[keys, key_id], api_visibility="private"
    )
    run.click(
        handlers.act,
        inputs=[action, name, password, is_admin],
        outputs=[status, users, password],
        api_visibility="private",
    )
    demo.load(
        handlers.on_load,
        outputs=[login_bar, tab, admin, keys, users],
        api_visibility="private",
    )
    return AccountTab(login_bar, tab, admin, keys, users, handlers)
