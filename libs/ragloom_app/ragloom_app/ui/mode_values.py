"""The chat's mode settings as the server takes them: checked as the HTTP API checks them.

Gradio's own checks of a component's value are not enough: a ``Number`` lets NaN and
infinity through (``{"data": [NaN]}`` parses, and ``nan < minimum`` is false) and a
``Textbox`` has no length limit. So the values the chat's settings form sends go through
the API's check, :func:`~ragloom_app.reasoning.settings.typed_mode_settings`, before they
answer a question or are saved as a user's defaults; a value it refuses raises
:class:`~ragloom_app.reasoning.settings.ModeSettingsError`, in words the user is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragloom_app.pages.chat import ChatPage
from ragloom_app.reasoning.settings import ModeSettingsError, typed_mode_settings
from ragloom_app.ui.settings_form import SettingsForm

__all__ = ["checked_mode_settings", "every_mode_settings"]


def checked_mode_settings(
    page: ChatPage, form: SettingsForm, mode_id: str, values: Sequence[Any]
) -> dict[str, Any]:
    """The settings of ``mode_id`` from the values of every component of ``form``, checked
    and typed by the mode's own specs, as the HTTP API checks a request's; raises
    :class:`ModeSettingsError` for a value the mode refuses (``UnknownModeError`` for a
    mode that is not registered)."""
    specs = page.reasoning_class(mode_id).get_user_settings()
    return typed_mode_settings(specs, form.values_for(mode_id, values))


def every_mode_settings(
    page: ChatPage, form: SettingsForm, values: Sequence[Any]
) -> dict[str, dict[str, Any]]:
    """The settings of every mode of ``form``, by mode id, each checked as
    :func:`checked_mode_settings` checks them; the :class:`ModeSettingsError` of a value
    refused names its mode (its group may be hidden from the user)."""
    settings: dict[str, dict[str, Any]] = {}
    for mode_id in form.specs:
        try:
            settings[mode_id] = checked_mode_settings(page, form, mode_id, values)
        except ModeSettingsError as exc:
            name = page.reasoning_class(mode_id).get_info().name
            raise ModeSettingsError(f"{name}: {exc}") from None
    return settings
