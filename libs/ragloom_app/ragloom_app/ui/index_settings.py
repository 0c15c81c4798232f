"""The chat's per-index search settings: one group per index, for every reasoning mode.

Each index shows its type's ``get_user_settings()`` (the file index: retrieval mode, MMR,
LLM reranking), laid out by the same form code as the modes' settings
(:mod:`ragloom_app.ui.settings_form`). Indices are created and deleted while the page is
open, so the groups are drawn by a ``gr.render`` when the page loads and whenever the
Chat tab is shown again; the values a user picks live in a per-session ``gr.State``
(index name → settings), which the chat sends as the request's ``index_settings``. Both
start from the user's saved defaults (:mod:`ragloom_app.accounts.preferences`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import gradio as gr

from ragloom_app.accounts.preferences import ChatDefaultsStore
from ragloom_app.app import BaseApp
from ragloom_app.index.settings import IndexSettingsError, typed_setting_value
from ragloom_app.ui import notify
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.settings_form import build_settings_form, coerce_value

__all__ = ["IndexSettingsPanel", "build_index_settings", "index_specs", "remember", "sent"]

logger = logging.getLogger(__name__)

IndexValues = dict[str, dict[str, Any]]
"""What the session's state holds: index name → the settings the user changed."""


def index_specs(app: BaseApp, user_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The runtime settings of every index ``user_id`` may read that has some, by index
    name, oldest first.

    An index type whose ``get_user_settings`` raises shows none (it is logged): one broken
    plugin must not take the chat's settings down.
    """
    specs: dict[str, dict[str, dict[str, Any]]] = {}
    for index in app.indices.readable_by(user_id):
        try:
            own = type(index).get_user_settings()
        except Exception:
            logger.exception("the settings of the index %r cannot be shown", index.name)
            continue
        if own:
            specs[index.name] = {key: dict(spec) for key, spec in own.items()}
    return specs


def remember(
    values: IndexValues | None, index: str, key: str, spec: Mapping[str, Any], value: Any
) -> IndexValues:
    """``values`` with ``index``'s ``key`` set to ``value``, checked and typed as the
    server checks a request's index settings (a new dict: gradio compares a state by
    value). A value the spec refuses is not kept, and the user is told why: gradio lets
    NaN through a number box, and a kept NaN would fail every later question."""
    values = values or {}
    try:
        typed = typed_setting_value(key, dict(spec), coerce_value(spec, value))
    except IndexSettingsError as exc:
        notify.warn(f"The search setting was not kept: index {index!r}: {exc}.")
        return values
    return {**values, index: {**values.get(index, {}), key: typed}}


def sent(app: BaseApp, values: IndexValues | None, user_id: str) -> IndexValues:
    """The ``index_settings`` a request sends: the session's values for the indices that
    still exist and ``user_id`` may read (one deleted since they were set is forgotten,
    not an error)."""
    names = {index.name for index in app.indices.readable_by(user_id)}
    return {name: dict(given) for name, given in (values or {}).items() if name in names}


@dataclass
class IndexSettingsPanel:
    """The session's values (an input of the chat's answer) and what draws the groups."""

    values: gr.State
    draw: Callable[[gr.Request], None]


def build_index_settings(app: BaseApp, triggers: list[Any]) -> IndexSettingsPanel:
    """Lay out the per-index groups (inside the current block), drawn again on ``triggers``
    (e.g. the page's load and the Chat tab's select)."""
    values = gr.State({})

    @gr.render(triggers=triggers)
    def draw(request: gr.Request) -> None:
        user_id = ui_user(app, request).id
        specs = index_specs(app, user_id)
        # Drawn with the user's saved defaults; the state gets them on load too.
        saved = ChatDefaultsStore(app.engine).get(user_id).offered({}, specs)
        for index, given in saved.indices.items():
            for key, value in given.items():
                specs[index][key]["value"] = value
        if not specs:
            gr.HTML('<div class="rl-empty">No index has search settings.</div>')
            return
        form = build_settings_form(specs, None, "index-setting", every_owner=True)
        for (index, key), component in zip(form.keys, form.components, strict=True):
            spec = form.specs[index][key]
            # Every input setting_component makes has an `input` event (the user's own
            # changes, never the render's); the base class does not declare it.
            cast(Any, component).input(
                lambda state, value, index=index, key=key, spec=spec: remember(
                    state, index, key, spec, value
                ),
                inputs=[values, component],
                outputs=values,
                api_visibility="private",
            )

    return IndexSettingsPanel(values, draw)
