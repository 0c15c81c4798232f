"""terminal_text: what ``ragloom ask`` prints holds no control character but newline and tab."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom_app.terminal import terminal_text

CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[31mred\x1b[0m ok", "red ok"),  # CSI (colours)
        ("\x1b[2J\x1b[Hclear", "clear"),  # clear the screen, move the cursor
        ("\x1b]0;title\x07x", "x"),  # OSC, ended by BEL
        ("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"),  # OSC 8 link
        ("\x1bPdevice control\x1b\\x", "x"),  # DCS
        ("\x9b31mC1 CSI\x9d0;t\x9cz", "C1 CSIz"),  # 8-bit CSI and OSC
        ("\x1bcreset \x1b(Bcharset", "reset charset"),  # two-byte escapes
        ("a\rb\x08c\x07d\x00e\x7f", "abcde"),  # C0 and DEL
        ("\u202ereversed\u202c \u2066isolated\u2069 \u200fmark", "reversed isolated mark"),
        ("keeps\ttabs\nand newlines", "keeps\ttabs\nand newlines"),
        ("Unicode stays: café, 東京, emoji 🎉", "Unicode stays: café, 東京, emoji 🎉"),
        ("\x1b]8;;http://cut", ""),  # an unterminated OSC ends the text, as a terminal would
        ("\x1b[3", "3"),  # a sequence cut by streaming leaves inert text
    ],
)
def test_sequences_and_controls_are_removed(text: str, shown: str) -> None:
    assert terminal_text(text) == shown


_PIECES = st.one_of(
    st.text(),
    st.sampled_from(["\x1b", "[", "]", "\x07", "\\", "\x9b", "\x9d", "\x9c", "8;;", "0m", "P"]),
)


@given(st.lists(_PIECES, max_size=30).map("".join))
def test_nothing_but_newline_and_tab_survives(text: str) -> None:
    assert not CONTROLS.search(terminal_text(text))
