"""Toasts for the user: the one way the UI shows a warning.

Gradio renders a toast's message as HTML, so a message holding a file name, an index name
or a model's words could carry markup. :func:`warn` and :func:`error` escape every
message, so no caller can forget to.
"""

from __future__ import annotations

import html

import gradio as gr

__all__ = ["error", "info", "warn"]


def info(message: str) -> None:
    """Show ``message`` (plain text, escaped here) as an information toast."""
    gr.Info(html.escape(message))


def warn(message: str) -> None:
    """Show ``message`` (plain text, escaped here) as a warning toast."""
    gr.Warning(html.escape(message))


def error(message: str) -> gr.Error:
    """The error to raise from a handler to show ``message`` (plain text, escaped here) as
    an error toast: ``raise notify.error(...)``."""
    return gr.Error(html.escape(message))
