"""File names that would make a listing or a citation lie: refused, or cleaned to what shows.

A right-to-left override makes ``invoice\\u202efdp.md`` display as ``invoicedm.pdf``; a
zero-width space or a tag character makes two names that look the same differ, or carries
invisible text. What the index lists and cites must be what the file is called.
"""

from __future__ import annotations

import unicodedata
import zipfile
from pathlib import Path

import pytest

from ragloom_app.index.file.archives import member_display_name, shown_member_name
from ragloom_app.index.file.names import UnsafeNameError, clean_name, safe_display_name
from tests.helpers.file_index import hash_file_index

pytestmark = pytest.mark.security

TEXT = "# Pumps\n\nThe harbour pumps move seawater uphill at night.\n"

RLO = "\u202e"
ZWSP = "\u200b"
ZWNJ = "\u200c"
ZWJ = "\u200d"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (f"invoice{RLO}dm.pdf", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("a\u2066b\u2069.md", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("a\u202ab.md", "U+202A LEFT-TO-RIGHT EMBEDDING"),
        ("two\u2028lines.md", "line break (U+2028 LINE SEPARATOR)"),
        ("two\u2029lines.md", "line break (U+2029 PARAGRAPH SEPARATOR)"),
        ("caf\udce9.md", "not valid text"),
        ("bell\x07.md", "control characters"),
        ("next\x85line.md", "control characters"),
    ],
)
def test_names_that_would_display_otherwise_are_refused(raw: str, reason: str) -> None:
    with pytest.raises(UnsafeNameError) as refused:
        safe_display_name(raw)
    assert reason in str(refused.value)
    # Shown in a failure, such a name reads in the order it was written.
    shown = shown_member_name(raw)
    assert all(unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Zl", "Zp"} for ch in shown)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (f"re{ZWSP}port.md", "report.md"),
        ("\ufeffnotes.md", "notes.md"),
        ("soft\u00adhyphen.md", "softhyphen.md"),
        ("mark\u200f.md", "mark.md"),
        ("arabic\u061c.md", "arabic.md"),
        # Tag characters spell invisible ASCII ("IGNORE") after the visible name.
        ("notes" + "".join(chr(0xE0000 + ord(c)) for c in "IGNORE") + ".md", "notes.md"),
        ("filler\u3164.md", "filler.md"),
        (f"{ZWJ}edge{ZWNJ}.md", "edge.md"),
        # NFC: a decomposed é (as macOS writes it) is the composed one.
        ("cafe\u0301.md", "caf\u00e9.md"),
        # Joiners between visible characters stay: Persian and emoji need them.
        (
            f"\u0645\u06cc{ZWNJ}\u062e\u0648\u0627\u0647\u0645.md",
            f"\u0645\u06cc{ZWNJ}\u062e\u0648\u0627\u0647\u0645.md",
        ),
        (f"\U0001f468{ZWJ}\U0001f469.md", f"\U0001f468{ZWJ}\U0001f469.md"),
    ],
)
def test_invisible_characters_are_removed_and_names_normalised(raw: str, shown: str) -> None:
    assert safe_display_name(raw) == shown
    assert clean_name(shown) == shown  # cleaning is idempotent


def test_an_archive_member_path_is_cleaned_part_by_part() -> None:
    assert member_display_name("a.zip", f"do{ZWSP}cs/cafe\u0301.md") == "a.zip/docs/caf\u00e9.md"
    with pytest.raises(UnsafeNameError, match="RIGHT-TO-LEFT OVERRIDE"):
        member_display_name("a.zip", f"docs/x{RLO}dm.txt")


def test_what_is_listed_and_cited_is_what_the_file_is_called(tmp_path: Path) -> None:
    index = hash_file_index(tmp_path / "data")
    upload = tmp_path / "upload"
    upload.mkdir()
    paths = []
    for number in range(4):
        path = upload / f"f{number}.md"
        path.write_text(f"{TEXT}\nCopy number {number} of the pump notes.\n")
        paths.append(path)
    archive = upload / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(f"evil{RLO}dm.txt", "# Evil\n\nA member that lies about its type.\n")
        bundle.writestr(f"pum{ZWSP}ps.md", "# Pumps\n\nThe quay pumps are serviced in spring.\n")
    names = [f"invoice{RLO}dm.pdf", f"re{ZWSP}port.md", "cafe\u0301.md", "plain.md", "bundle.zip"]
    outcomes = {
        o.name: o for o in index.get_indexing_pipeline({}).run([*paths, archive], names=names)
    }
    assert outcomes["invoice?dm.pdf"].status == "failed"
    assert "RIGHT-TO-LEFT OVERRIDE" in outcomes["invoice?dm.pdf"].reason
    assert outcomes["bundle.zip/evil?dm.txt"].status == "failed"
    # The rest of the same upload is indexed under the names that show.
    indexed = {name for name, o in outcomes.items() if o.status == "indexed"}
    assert indexed == {"report.md", "caf\u00e9.md", "plain.md", "bundle.zip/pumps.md"}
    listed = {source["name"] for source in index.list_sources()}
    assert listed == indexed
    hits = index.get_retriever_pipelines({})[0]("quay pumps serviced spring", top_k=10)
    assert "bundle.zip/pumps.md" in {hit.chunk.source_name for hit in hits}
    assert index.check().clean
