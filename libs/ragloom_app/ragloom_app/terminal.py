"""Text from documents and models made safe to print to a terminal.

A document can hold terminal control sequences, and an answer can repeat them: an escape
sequence can recolour or clear the screen, rewrite the title, hide text, move the cursor
over what was printed, or (OSC 8) show a link whose target is not what it says; a
carriage return or backspaces overwrite a line; bidirectional controls reorder what is
seen. :func:`terminal_text` removes all of them, keeping newlines and tabs.
"""

from __future__ import annotations

import re

__all__ = ["terminal_text"]

# Whole sequences first, so that their parameters do not show as stray text: CSI
# (ESC [ or 8-bit 0x9b) up to its final byte; OSC, DCS, SOS, PM and APC up to their string
# terminator (BEL, ESC \ or 8-bit 0x9c) or the end of the text; other two-byte escapes.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]"
)
# Then every control character left, but newline and tab: C0, DEL, C1, and the bidi
# embeddings, overrides, isolates and marks.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """``text`` without escape sequences or control characters (newline and tab stay).

    The result holds no ESC, C0 or C1 character at all, whatever the input; a sequence
    split across two calls (two streamed pieces of an answer) leaves inert text behind.
    """
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))
