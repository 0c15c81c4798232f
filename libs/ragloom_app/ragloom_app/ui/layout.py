"""The whole page: a header (with who is logged in) and the Chat, Files, Plugins and
Account tabs, plus the theme and CSS.

In gradio 6 the theme and CSS are arguments of ``launch()``, not of ``gr.Blocks()``:
:func:`launch_styling` returns them for :func:`ragloom_app.ui.server.serve`. The CSS is
``ragloom_app/static/ragloom.css``; gradio puts it in the page as a ``<style>``, which the
content security policy allows (``style-src 'self' 'unsafe-inline'``, web/headers.py).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import gradio as gr

from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import ChatPage
from ragloom_app.ui.account_tab import build_account_tab
from ragloom_app.ui.chat_tab import build_chat_tab
from ragloom_app.ui.files_tab import build_files_tab
from ragloom_app.ui.plugins_tab import build_plugins_tab

__all__ = ["STYLESHEET", "build_ui", "launch_styling", "stylesheet"]

STYLESHEET = "static/ragloom.css"
"""The page's CSS, a file of the ``ragloom_app`` package (read when the server starts)."""

_HEADER = (
    '<div class="rl-header"><h1>Ragloom</h1>'
    "<p>Ask questions about your documents. Everything runs on this computer: "
    "no file or question leaves it.</p></div>"
)


def stylesheet() -> str:
    """The text of :data:`STYLESHEET`, from the installed package."""
    return files("ragloom_app").joinpath(STYLESHEET).read_text(encoding="utf-8")


def launch_styling() -> dict[str, Any]:
    """The ``theme`` and ``css`` arguments for ``launch()``.

    The theme's font ships with gradio (a local font): a Google font would make every
    browser that opens the app fetch it from the internet.
    """
    theme = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate", neutral_hue="slate")
    return {"theme": theme, "css": stylesheet()}


def build_ui(app: BaseApp) -> gr.Blocks:
    """The Ragloom page for a started app (not launched)."""
    page = ChatPage(app)
    # Uploads are copied into the index; gradio's own copies need not outlive a day.
    with gr.Blocks(title="Ragloom", analytics_enabled=False, delete_cache=(3600, 86400)) as demo:
        with gr.Row(equal_height=True, elem_classes="rl-header-row"):
            gr.HTML(_HEADER)
            login_bar = gr.HTML("", elem_id="login-bar", container=False)
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Chat", id="chat", elem_id="tab-chat") as chat_tab:
                chat = build_chat_tab(demo, page, chat_tab)
            with gr.Tab("Files", id="files", elem_id="tab-files"):
                build_files_tab(demo, app, chat.file_filter)
            with gr.Tab("Plugins", id="plugins", elem_id="tab-plugins"):
                build_plugins_tab(demo, app)
            build_account_tab(demo, app, login_bar)
    return demo
