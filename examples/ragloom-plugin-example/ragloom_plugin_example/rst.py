"""reStructuredText files read as plain text: the markup goes, the words stay.

No docutils: a handful of rules cover titles, directives, comments, roles and links,
which is what retrieval needs (an answer quotes words, not markup).
"""

from __future__ import annotations

import re
from pathlib import Path

from ragloom.loaders import EmptyDocumentError, TextReader
from ragloom.schema import Page

__all__ = ["RstReader", "rst_to_text"]

_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::\s*(.*)$")
_COMMENT_OR_TARGET = re.compile(r"^\s*\.\.(\s|$)")
_OPTION = re.compile(r"^\s+:[\w-]+:")
_ROLE = re.compile(r":[\w:+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`__?")
_REFERENCE = re.compile(r"`([^`]+)`_{1,2}|\b(\w+)_\b")
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"\*\*(\S.*?)\*\*|\*(\S[^*]*?)\*")


def _inline(line: str) -> str:
    line = _ROLE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _LITERAL.sub(r"\1", line)
    line = _REFERENCE.sub(lambda m: m.group(1) or m.group(2), line)
    return _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), line)


def rst_to_text(source: str) -> str:
    """The words of a reStructuredText document, its paragraphs kept apart."""
    lines: list[str] = []
    mode = ""  # "comment": skip its indented body; "options": skip a directive's options
    for line in source.split("\n"):
        indented = line[:1] in (" ", "\t")
        if mode == "comment" and (indented or not line.strip()):
            continue
        if mode == "options" and (not line.strip() or _OPTION.match(line)):
            continue
        mode = ""
        directive = _DIRECTIVE.match(line)
        if directive:
            # The argument is often worth keeping: a title, a caption, a language.
            if directive.group(1):
                lines.append(_inline(directive.group(1)))
            lines.append("")
            mode = "options"
        elif _COMMENT_OR_TARGET.match(line):
            mode = "comment"
        elif not _ADORNMENT.match(line):
            text = _inline(line.strip())
            lines.append(text[:-1] if text.endswith("::") else text)
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


class RstReader:
    """Reads ``.rst`` files into one page of plain text."""

    extensions: tuple[str, ...] = (".rst", ".rest")

    def read(self, path: Path) -> list[Page]:
        """The text of ``path`` without its markup; ``LoaderError`` if there is none."""
        (page,) = TextReader().read(path)  # decoding, empty and binary files refused there
        text = rst_to_text(page.text)
        if not text.strip():
            raise EmptyDocumentError("the file has no text once its markup is removed", path)
        return [Page(text=text, number=None)]
