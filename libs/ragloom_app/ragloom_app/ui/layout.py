"""The whole page: a header and the Chat, Files and Plugins tabs, plus the theme and CSS.

In gradio 6 the theme and CSS are arguments of ``launch()``, not of ``gr.Blocks()``:
:func:`launch_styling` returns them for :func:`ragloom_app.ui.server.serve`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import ChatPage
from ragloom_app.ui.chat_tab import build_chat_tab
from ragloom_app.ui.files_tab import build_files_tab
from ragloom_app.ui.plugins_tab import build_plugins_tab

__all__ = ["CSS", "build_ui", "launch_styling"]

# Gradio's CSS variables keep the panels readable in both light and dark mode.
CSS = """
.rl-header { padding: 4px 2px 0; }
.rl-header h1 { margin: 0; font-size: 1.6rem; }
.rl-header p { margin: 2px 0 0; color: var(--body-text-color-subdued); }
.rl-panel-title h3 { margin: 4px 0 0; font-size: 1rem; }
.rl-empty { color: var(--body-text-color-subdued); font-style: italic; padding: 8px 2px; }
.rl-evidence { display: flex; flex-direction: column; gap: 10px; max-height: 560px;
  overflow-y: auto; padding-right: 4px; }
.rl-cite { border: 1px solid var(--block-border-color); border-radius: 8px;
  background: var(--background-fill-secondary); padding: 8px 10px; }
.rl-cite-head { display: flex; justify-content: space-between; gap: 8px; font-weight: 600;
  font-size: 0.9rem; margin-bottom: 4px; word-break: break-word; }
.rl-score { font-weight: 400; color: var(--body-text-color-subdued); font-size: 0.8rem; }
.rl-cite-text { white-space: pre-wrap; font-size: 0.85rem; line-height: 1.45;
  max-height: 220px; overflow-y: auto; }
.rl-cite-text mark { background: #fde68a; color: #1f2937; border-radius: 2px; padding: 0 1px; }
.rl-found-by { font-size: 0.78rem; color: var(--body-text-color-subdued); margin-bottom: 4px; }
.rl-summary { font-weight: 600; margin: 4px 0 6px; }
/* gradio's .prose gives table, tr, td and th a 1px border each: undo it on rows too. */
.rl-table { width: 100%; border-collapse: collapse; font-size: 0.88rem; border: 0;
  margin: 0; }
.rl-table tr { border: 0; }
.rl-table th, .rl-table td { border: 0; border-bottom: 1px solid var(--border-color-primary);
  padding: 6px 8px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
.rl-table th { font-weight: 600; color: var(--body-text-color-subdued);
  border-bottom-color: var(--block-border-color); }
.rl-table td:first-child { font-weight: 500; }
.rl-conversations .wrap { flex-direction: column; flex-wrap: nowrap; gap: 4px;
  max-height: 420px; overflow-y: auto; }
.rl-conversations label { width: 100%; min-width: 0; }
.rl-conversations label span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.rl-badge { display: inline-block; border-radius: 999px; padding: 1px 8px; font-size: 0.78rem;
  font-weight: 600; white-space: nowrap; }
/* The chat's own "Clear" would empty the view but keep the stored conversation: the
   "New conversation" button is the one way to start afresh. */
#chatbot .icon-button-wrapper:has(> button[aria-label="Clear"]:only-child),
#chatbot button[aria-label="Clear"] { display: none; }
.rl-indexed { background: #dcfce7; color: #166534; }
.rl-skipped { background: #e5e7eb; color: #374151; }
.rl-failed { background: #fee2e2; color: #991b1b; }
.rl-indexing, .rl-queued { background: #fef9c3; color: #854d0e; }
.rl-loaded { background: #dcfce7; color: #166534; }
.rl-disabled { background: #e5e7eb; color: #374151; }
"""

_HEADER = (
    '<div class="rl-header"><h1>Ragloom</h1>'
    "<p>Ask questions about your documents. Everything runs on this computer: "
    "no file or question leaves it.</p></div>"
)


def launch_styling() -> dict[str, Any]:
    """The ``theme`` and ``css`` arguments for ``launch()``.

    The theme's font ships with gradio (a local font): a Google font would make every
    browser that opens the app fetch it from the internet.
    """
    theme = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate", neutral_hue="slate")
    return {"theme": theme, "css": CSS}


def build_ui(app: BaseApp) -> gr.Blocks:
    """The Ragloom page for a started app (not launched)."""
    page = ChatPage(app)
    # Uploads are copied into the index; gradio's own copies need not outlive a day.
    with gr.Blocks(title="Ragloom", analytics_enabled=False, delete_cache=(3600, 86400)) as demo:
        gr.HTML(_HEADER)
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Chat", id="chat", elem_id="tab-chat") as chat_tab:
                chat = build_chat_tab(demo, page, chat_tab)
            with gr.Tab("Files", id="files", elem_id="tab-files"):
                build_files_tab(demo, app, chat.file_filter)
            with gr.Tab("Plugins", id="plugins", elem_id="tab-plugins"):
                build_plugins_tab(app)
    return demo
