"""A data folder moved to another path keeps its files: the stored paths follow it at the
next start. A copy of one (the original still there) is not taken for it."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import Source
from ragloom_app.index.file import FileIndex
from ragloom_app.moved_data_folder import LOCATION_FILE, follow_moved_data_folder
from tests.helpers.api_server import replay_app


def _index(app: BaseApp) -> FileIndex:
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    return index


def _app_with_a_file(folder: Path) -> tuple[BaseApp, str]:
    app = replay_app(folder)
    document = folder / "reactor.md"
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    (outcome,) = _index(app).get_indexing_pipeline({}).run([document])
    assert outcome.status == "indexed" and outcome.source_id
    app.engine.dispose()
    return app, outcome.source_id


def _started(folder: Path, caplog: pytest.LogCaptureFixture) -> BaseApp:
    """The app of ``folder`` started again, what it says of its data folder logged."""
    with caplog.at_level(logging.WARNING, logger="ragloom_app.moved_data_folder"):
        return replay_app(folder)


def _stored_paths(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return [s.stored_path or "" for s in session.exec(select(Source))]


def test_a_moved_data_folder_finds_its_stored_files_where_it_is_now(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, source_id = _app_with_a_file(tmp_path / "old")
    shutil.move(tmp_path / "old", tmp_path / "new")

    moved = _started(tmp_path / "new", caplog)
    data = tmp_path / "new" / "data"
    assert f"the data folder was moved from {tmp_path / 'old' / 'data'} to {data}: 1 stored" in (
        caplog.text
    )
    (stored,) = _stored_paths(moved.engine)
    assert Path(stored).parent == _index(moved).files_dir and Path(stored).is_file()
    report = _index(moved).check()
    assert report.clean and report.notes == [], report
    # Before, the copy looked stored through another folder: reindexing it failed it as
    # lost, and took it out of the stores.
    again = _index(moved).reindex_source(source_id)
    assert again is not None and again.status == "indexed", again
    assert json.loads((data / LOCATION_FILE).read_text())["places"] == [str(data)]


def test_a_copied_data_folder_leaves_the_files_to_the_original(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    original, _ = _app_with_a_file(tmp_path / "first")
    shutil.copytree(tmp_path / "first", tmp_path / "copy")
    copy = _started(tmp_path / "copy", caplog)
    assert "that folder is still there: taken for a copy" in caplog.text
    assert _stored_paths(copy.engine) == _stored_paths(original.engine)
    assert Path(_stored_paths(copy.engine)[0]).parent == _index(original).files_dir

    # The original removed, the copy is the folder now: its next start moves the paths.
    shutil.rmtree(tmp_path / "first")
    assert follow_moved_data_folder(copy.engine, copy.settings.data_dir) == 1
    assert Path(_stored_paths(copy.engine)[0]).parent == _index(copy).files_dir


def test_only_the_paths_under_the_old_place_move(tmp_path: Path) -> None:
    app, _ = _app_with_a_file(tmp_path / "old")
    # As another app process's file, stored through its own data folder on PostgreSQL.
    elsewhere = str(tmp_path / "other" / "data" / "indices" / "1" / "files" / "abc.md")
    with Session(app.engine) as session:
        theirs = Source(
            id="theirs", index_id=1, name="theirs.md", sha256="0" * 64, stored_path=elsewhere
        )
        session.add(theirs)
        session.commit()
    app.engine.dispose()
    shutil.move(tmp_path / "old", tmp_path / "new")
    data = tmp_path / "new" / "data"
    engine = create_engine(f"sqlite:///{data / 'ragloom.db'}")

    assert follow_moved_data_folder(engine, data) == 1
    ours, theirs_now = sorted(_stored_paths(engine), key=lambda path: path == elsewhere)
    assert Path(ours).parent.parent.parent.parent == data and theirs_now == elsewhere
    # Noted there now: the next start moves nothing.
    assert follow_moved_data_folder(engine, data) == 0


def test_a_start_in_place_changes_nothing(tmp_path: Path) -> None:
    app, _ = _app_with_a_file(tmp_path / "here")
    note = tmp_path / "here" / "data" / LOCATION_FILE
    written = note.stat().st_mtime_ns
    before = _stored_paths(app.engine)
    assert follow_moved_data_folder(app.engine, tmp_path / "here" / "data") == 0
    assert _stored_paths(app.engine) == before and note.stat().st_mtime_ns == written


@pytest.mark.parametrize("note", ["not json", '{"places": "nowhere"}', "[1, 2]"])
def test_an_unreadable_note_is_written_again(tmp_path: Path, note: str) -> None:
    app, _ = _app_with_a_file(tmp_path / "here")
    data = tmp_path / "here" / "data"
    (data / LOCATION_FILE).write_text(note, encoding="utf-8")
    assert follow_moved_data_folder(app.engine, data) == 0
    assert json.loads((data / LOCATION_FILE).read_text())["places"] == [str(data)]
