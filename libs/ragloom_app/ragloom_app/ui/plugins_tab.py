"""The Plugins tab: the installed plugins, their versions, what each added, their errors.

A plugin that failed to load is listed with its error, so a broken install is seen here
rather than only in the server's log (the app runs without it).
"""

from __future__ import annotations

import gradio as gr

from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER
from ragloom_app.ui import render
from ragloom_app.ui.identity import ui_user

__all__ = ["build_plugins_tab", "plugins_page_html"]

_INTRO = (
    "Plugins are pip packages that add reasoning modes, index types, agent tools, file "
    "readers or models. Install one into Ragloom's environment and restart; list its name "
    "in `DISABLED_PLUGINS` (or `RAGLOOM_DISABLED_PLUGINS`) to switch it off. "
    "See docs/plugins.md."
)


def plugins_page_html(app: BaseApp, user_id: str = LOCAL_USER) -> str:
    """The plugin table of a started app, with the indices a missing plugin left out that
    ``user_id`` may read."""
    plugins = [plugin.to_dict() for plugin in app.plugins]
    return render.plugins_html(plugins, app.indices.unavailable_to(user_id))


def build_plugins_tab(demo: gr.Blocks, app: BaseApp) -> gr.HTML:
    """Lay out the tab inside the current ``gr.Tab``; returns the plugin table."""
    gr.Markdown(_INTRO, elem_id="plugins-intro")
    # Filled when the page loads: the indices left out are named to whom may read them.
    table = gr.HTML("", elem_id="plugin-list")

    def shown(request: gr.Request) -> str:
        return plugins_page_html(app, ui_user(app, request).id)

    demo.load(shown, outputs=table, api_visibility="private")
    return table
