"""The web UI of Ragloom (gradio): ``serve(app)`` starts it.

Importing this package does not import gradio; :func:`serve` does, after switching off
the libraries' telemetry.
"""

from ragloom_app.ui.server import serve

__all__ = ["serve"]
