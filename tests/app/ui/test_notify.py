"""Toasts are escaped in one place, and the UI shows none any other way."""

from __future__ import annotations

import warnings
from pathlib import Path

import ragloom_app
from ragloom_app.ui import notify

APP = Path(ragloom_app.__file__).parent


def test_a_warning_and_an_error_show_markup_as_text() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        notify.warn('Could not create "<img src=x onerror=alert(1)>"')
    assert [str(w.message) for w in shown] == [
        "Could not create &quot;&lt;img src=x onerror=alert(1)&gt;&quot;"
    ]
    assert str(notify.error("a <b>bold</b> name")) == "'a &lt;b&gt;bold&lt;/b&gt; name'"


def test_the_ui_shows_toasts_only_through_the_helper() -> None:
    callers = [
        path.relative_to(APP).as_posix()
        for folder in ("ui", "pages")
        for path in sorted((APP / folder).glob("*.py"))
        if path.name != "notify.py"
        and any(call in path.read_text() for call in ("gr.Warning(", "gr.Error(", "gr.Info("))
    ]
    assert callers == []
