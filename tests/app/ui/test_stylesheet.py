"""The page's CSS is a file of the package, read when the server starts."""

from __future__ import annotations

from pathlib import Path

import ragloom_app
from ragloom_app.ui.layout import STYLESHEET, launch_styling, stylesheet


def test_the_css_comes_from_the_packages_static_folder() -> None:
    text = (Path(ragloom_app.__file__).parent / STYLESHEET).read_text(encoding="utf-8")
    assert stylesheet() == text == launch_styling()["css"]
    # The classes the chat, the evidence and the settings rely on are all there.
    for selector in (".rl-cite", ".rl-evidence", ".rl-table", ".rl-setting-owner", "#chatbot"):
        assert selector in text
    assert "<" not in text  # CSS alone: gradio puts it in a <style> of its own
