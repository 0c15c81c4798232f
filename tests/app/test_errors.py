"""User-facing errors: words and a log reference for the user, the whole story in the log."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.llms.base import LLMError
from ragloom.loaders import LoaderError
from ragloom_app.errors import (
    MAX_MESSAGE_CHARS,
    UserFacingError,
    reason_for,
    scrub,
    user_error,
)
from ragloom_app.settings import SettingsError


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "cannot reach http://10.0.0.5:8000/v1: Connection error",
            "cannot reach [address hidden]: Connection error",
        ),
        (
            "llama.cpp could not load /root/.cache/ragloom/qwen.gguf: bad magic",
            "llama.cpp could not load [path hidden]: bad magic",
        ),
        ("settings in ~/ragloom/flowsettings.py.", "settings in [path hidden]."),
        ("see ./docs/x.md or ../y", "see [path hidden] or [path hidden]"),
        (r"C:\Users\bob\model.gguf is missing", "[path hidden] is missing"),
        ("first line\nTraceback (most recent call last):\n  File", "first line"),
        ("\x1b[31mred\x1b[0m \u202eevil", "[31mred [0m evil"),
        # Slashes inside words and arithmetic are not paths.
        ("ReAct/ReWOO and/or 1 / 2", "ReAct/ReWOO and/or 1 / 2"),
        ("C:/Users/bob/secret.pdf is locked", "[path hidden] is locked"),
        (r"\\server\share\x.pdf is gone", "[path hidden] is gone"),
        ("path:/srv/ragloom/x.db", "path:[path hidden]"),
        ("cannot reach localhost:11434/api/chat", "cannot reach [address hidden]"),
        ("cannot reach 10.0.0.5:8000.", "cannot reach [address hidden]."),
        ("no file '/home/u/My Documents/x.pdf' here", "no file '[path hidden]' here"),
        (
            "HTTPConnectionPool(host='llm.internal', port=11434): Max retries",
            "HTTPConnectionPool([address hidden]): Max retries",
        ),
        ("ollama:11434/api/chat refused", "[address hidden] refused"),
        ("cannot reach [fd00::12]:8080", "cannot reach [address hidden]"),
        ('no file "/srv/it\'s here/x.pdf"', 'no file "[path hidden]"'),
        # Times, ratios, versions and line numbers are not addresses.
        ("line 3:45 at 12:30, ratio 2:1", "line 3:45 at 12:30, ratio 2:1"),
        ("version 3.5:10, section 2.1:12", "version 3.5:10, section 2.1:12"),
    ],
)
def test_scrub_hides_urls_paths_and_later_lines(text: str, shown: str) -> None:
    assert scrub(text) == shown


def test_scrub_bounds_the_length() -> None:
    shown = scrub("word " * 1000)
    assert len(shown) == MAX_MESSAGE_CHARS and shown.endswith("…")
    # A long message keeps the log reference it ends with.
    referenced = scrub("word " * 1000 + "(log reference 3fa2b9c1)")
    assert len(referenced) == MAX_MESSAGE_CHARS
    assert referenced.endswith("… (log reference 3fa2b9c1)")


@given(st.text())
def test_scrub_never_leaves_a_line_break_a_control_or_a_url(text: str) -> None:
    shown = scrub(text)
    assert len(shown) <= MAX_MESSAGE_CHARS
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", shown)
    assert not re.search(r"[a-zA-Z][a-zA-Z0-9+.-]*://", shown)


def test_worded_errors_keep_their_words_others_say_their_kind() -> None:
    assert reason_for(SettingsError("DEFAULT_LLM: 'x' is not in LLMS")) == (
        "DEFAULT_LLM: 'x' is not in LLMS"
    )
    assert reason_for(LoaderError("binary content")) == "binary content"
    assert reason_for(LLMError("http://h:1/v1 did not answer")) == (
        "[address hidden] did not answer"
    )
    assert reason_for(UserFacingError("the question is too long")) == "the question is too long"
    assert reason_for(TimeoutError("/tmp/x")) == "it took too long"
    assert reason_for(PermissionError("/etc/shadow")) == "a file could not be accessed"
    assert reason_for(KeyError("/srv/secret")) == "something unexpected went wrong inside Ragloom"
    # A form may declare its own worded kinds (an admin form's ValueError).
    assert reason_for(ValueError("chunk_size must be at least 32"), (ValueError,)) == (
        "chunk_size must be at least 32"
    )


def test_user_error_logs_the_trace_under_the_reference_it_shows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise RuntimeError("boom in /srv/ragloom/app.py at http://10.0.0.5/v1")
    except RuntimeError as exc:
        failure = user_error(exc, "Answering")
    assert re.fullmatch(
        r"Answering failed: something unexpected went wrong inside Ragloom "
        r"\(log reference [0-9a-f]{8}\)",
        failure.message,
    )
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert failure.reference in record.getMessage()
    assert record.exc_info is not None and "/srv/ragloom/app.py" in str(record.exc_info[1])
    assert "/srv" not in failure.message and "http" not in failure.message
