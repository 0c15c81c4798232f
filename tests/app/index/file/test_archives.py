"""Zip uploads: one outcome per member, bad archives refused, nothing written elsewhere."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.names import MAX_PATH_LENGTH
from ragloom_app.index.file.transfer import embedding_identity, export_index, import_index
from ragloom_app.settings import AppSettings
from tests.helpers.file_index import StoreSetup

GOOD = "# Pumps\n\nThe harbour pumps move seawater uphill at night.\n"
FILE_INDEX = "ragloom_app.index.file.FileIndex"
EVIL = b"# Evil\n\nThis file tried to leave the archive folder.\n"


@pytest.fixture
def index(tmp_path: Path, stores: StoreSetup) -> FileIndex:
    settings = stores.app_settings(tmp_path / "data")
    (index,) = BaseApp(settings).start().indices.indices
    assert isinstance(index, FileIndex)
    assert ".zip" in index.setting("extensions")
    return index


def _zip(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _by_name(outcomes: list[FileOutcome]) -> dict[str, FileOutcome]:
    return {o.name: o for o in outcomes}


def test_each_member_gets_its_own_outcome(index: FileIndex, tmp_path: Path) -> None:
    upload = tmp_path / "upload"
    upload.mkdir()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as nested:
        nested.writestr("deep.md", "# Deep\n\nHidden one level down.\n")
    archive = _zip(
        upload / "bundle.zip",
        {
            "docs/pumps.md": GOOD,
            "empty.txt": b"",
            "../../evil.md": EVIL,
            "inner.zip": inner.getvalue(),
            "bell\x07.md": GOOD,
            f"{'n' * 300}.md": GOOD,
        },
    )
    events = list(index.get_indexing_pipeline({}).stream([archive]))
    outcomes = _by_name([e for e in events if isinstance(e, FileOutcome)])
    assert set(outcomes) == {
        "bundle.zip/docs/pumps.md",
        "bundle.zip/empty.txt",
        "bundle.zip/../../evil.md",
        "bundle.zip/inner.zip",
        "bundle.zip/bell?.md",
        f"bundle.zip/{'n' * 199}…",
    }
    assert outcomes["bundle.zip/docs/pumps.md"].status == "indexed"
    assert outcomes["bundle.zip/docs/pumps.md"].chunks == 1
    assert outcomes["bundle.zip/empty.txt"].status == "failed"
    assert "empty" in outcomes["bundle.zip/empty.txt"].reason
    evil = outcomes["bundle.zip/../../evil.md"]
    assert evil.status == "failed" and "unsafe name" in evil.reason and evil.source_id is None
    nested = outcomes["bundle.zip/inner.zip"]
    assert nested.status == "failed" and "nested archive" in nested.reason
    # Names a plain upload could not have either: each part of a member's path is checked.
    assert "control characters" in outcomes["bundle.zip/bell?.md"].reason
    assert "303 characters long" in outcomes[f"bundle.zip/{'n' * 199}…"].reason
    fractions = [e.fraction for e in events if isinstance(e, IndexingProgress)]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0

    # Members are sources of their own, cited by their path in the archive.
    listed = {s["name"]: s["status"] for s in index.list_sources()}
    assert listed == {"bundle.zip/docs/pumps.md": "indexed", "bundle.zip/empty.txt": "failed"}
    (hit, *_) = index.get_retriever_pipelines({})[0]("harbour pumps seawater", top_k=3)
    assert hit.chunk.source_name == "bundle.zip/docs/pumps.md"
    assert index.check().clean

    # Nothing was written outside the data folder, and nothing is left in its tmp.
    written = _files_under(tmp_path)
    assert [p for p in written if not p.is_relative_to(tmp_path / "data")] == [archive]
    assert all(p.read_bytes() != EVIL for p in written if p != archive)
    data = index.resources.data_dir
    assert _files_under(data / "tmp") == [] and _files_under(data / "locks") == []

    # The same archive again: every member it indexed is skipped as already there.
    again = _by_name(index.get_indexing_pipeline({}).run([archive]))
    assert again["bundle.zip/docs/pumps.md"].status == "skipped"


def test_a_zip_bomb_is_one_failed_outcome(index: FileIndex, tmp_path: Path) -> None:
    # 8 MiB of zeros deflate to ~8 KB: a ratio of about 1000 to 1.
    bomb = _zip(tmp_path / "bomb.zip", {"zeros.txt": b"\0" * (8 << 20), "ok.md": GOOD})
    assert bomb.stat().st_size < 64 << 10
    (outcome,) = index.get_indexing_pipeline({}).run([bomb])
    assert (outcome.name, outcome.status) == ("bomb.zip", "failed")
    assert "zip bomb" in outcome.reason
    assert index.list_sources() == []
    assert index.check().clean
    data = index.resources.data_dir
    assert _files_under(data / "tmp") == [] and not (data / "files").exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"PK\x03\x04 not really a zip", "not a valid zip archive"), (b"", "empty")],
    ids=["corrupt", "empty"],
)
def test_an_unreadable_zip_is_one_failed_outcome(
    index: FileIndex, tmp_path: Path, content: bytes, reason: str
) -> None:
    (tmp_path / "broken.zip").write_bytes(content)
    (tmp_path / "notes.md").write_text(GOOD)
    broken, notes = index.get_indexing_pipeline({}).run(
        [tmp_path / "broken.zip", tmp_path / "notes.md"]
    )
    assert (broken.name, broken.status) == ("broken.zip", "failed")
    assert reason in broken.reason
    assert notes.status == "indexed"  # the next file of the upload goes on
    assert index.check().clean


def test_zip_is_refused_by_an_index_that_does_not_take_it(tmp_path: Path) -> None:
    config = {"extensions": [".md", ".txt"]}
    settings = AppSettings(
        data_dir=tmp_path / "data",
        indices=[{"name": "Notes", "type": "ragloom_app.index.file.FileIndex", "config": config}],
    )
    (index,) = BaseApp(settings).start().indices.indices
    archive = _zip(tmp_path / "bundle.zip", {"pumps.md": GOOD})
    (outcome,) = index.get_indexing_pipeline({}).run([archive])
    assert outcome.status == "failed"
    assert outcome.reason.startswith("unsupported file type '.zip'")


def test_a_member_name_past_4096_characters_fails_alone(tmp_path: Path, stores: StoreSetup) -> None:
    app = BaseApp(stores.app_settings(tmp_path / "data")).start()
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    folders = "d/" * 2000  # each part is short: only the whole name is too long
    longest = f"{folders}{'n' * (MAX_PATH_LENGTH - len('deep.zip/') - len(folders) - 3)}.md"
    archive = _zip(
        tmp_path / "deep.zip",
        {
            "d/" * 32000 + "notes.txt": "Notes kept thirty-two thousand folders down.",
            longest: GOOD,
            "top.md": "# Top\n\nThe top file of the archive.\n",
        },
    )
    outcomes = index.get_indexing_pipeline({}).run([archive])
    assert [o.status for o in outcomes] == ["failed", "indexed", "indexed"]
    assert outcomes[0].reason == (
        "the name in the archive is 64,018 characters long, folders included; the limit is 4,096"
    )
    assert len(outcomes[0].name) < 300  # shown cut short
    assert len(outcomes[1].name) == MAX_PATH_LENGTH
    assert index.check().clean

    # The longest name it keeps is one an import of the index accepts.
    spec = app.settings.embeddings[app.settings.default_embedding]
    identity = embedding_identity(spec, app.embeddings().dimension)
    export_index(index, tmp_path / "export.zip", identity)
    moved, _ = import_index(
        app.indices, tmp_path / "export.zip", identity, type_id=FILE_INDEX, name="Moved"
    )
    assert sorted(s["name"] for s in moved.list_sources()) == [
        f"deep.zip/{longest}",
        "deep.zip/top.md",
    ]
