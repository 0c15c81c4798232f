"""Who a UI event acts for: :func:`ui_user`, from the ``gr.Request`` gradio passes.

Gradio fills ``request.username`` from the mount's ``auth_dependency``
(:func:`ragloom_app.web.login.ui_user_id`): a user's id, or the local user's when login is
off. Every handler that reads or writes someone's data asks for the request and acts for
this user only; gradio has already refused an event without a live session.
"""

from __future__ import annotations

import gradio as gr

from ragloom_app.accounts import User
from ragloom_app.api.auth import LOCAL
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.ui import notify

__all__ = ["ui_user"]


def ui_user(app: BaseApp, request: gr.Request | None) -> User:
    """The user of ``request``; the local user when there is no request (a handler called
    directly, without gradio) and login is off.

    Raises ``gr.Error`` (shown in the page) for a request that names no live user: its
    account was disabled or deleted after the page loaded or the event was queued.
    """
    user_id = getattr(request, "username", None) if request is not None else None
    if user_id is None or user_id == LOCAL_USER:
        if app.settings.require_login:
            raise notify.error("Log in first: reload the page.")
        return LOCAL
    user = app.accounts.enabled_user(user_id)
    if user is None:
        raise notify.error("Your account was disabled or deleted: reload the page.")
    return user
