"""An index an import is filling, or that a killed import left half made, is known so in
every data folder, not only in the importing process's: two apps share one database,
each with a folder of its own (PostgreSQL and ``chroma run`` as a team deploys them, and
one SQLite file for the same machine's processes)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.advisory import AdvisoryLocks
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.import_marks import import_mark, mark_import
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.transfer import export_index, import_index, importer
from tests.helpers.api_server import replay_app
from tests.helpers.chroma_server import ChromaServer
from tests.helpers.postgres import PostgresServer, database
from tests.helpers.transfer import FILE_INDEX, file_index, identity, indexed

HALF_MADE = "an import into it stopped before every file was in"


@pytest.fixture
def on_servers(
    postgres_server: PostgresServer, chroma: ChromaServer, tmp_path: Path
) -> Iterator[tuple[BaseApp, BaseApp]]:
    """Two apps on one PostgreSQL database and one Chroma server, a folder each."""
    with database(postgres_server) as url:
        yield (
            replay_app(tmp_path / "one", database_url=url, chroma_server=chroma.url),
            replay_app(tmp_path / "two", database_url=url, chroma_server=chroma.url),
        )


@pytest.fixture
def on_sqlite(tmp_path: Path) -> tuple[BaseApp, BaseApp]:
    """Two apps on one SQLite file, a folder each."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    return replay_app(tmp_path / "one", database_url=url), replay_app(
        tmp_path / "two", database_url=url
    )


def _made_by_an_import(app: BaseApp, holder: str) -> FileIndex:
    """An index whose row names ``holder`` as the import filling it, as an import marks it
    (without the lock in its own folder: that folder is another process's)."""
    index = app.indices.create("Imported", FILE_INDEX, {}, shared=False)
    assert isinstance(index, FileIndex)
    mark_import(app.indices.engine, index.id, holder)
    return index


def _holder_of(pid: int, host: str | None = None) -> str:
    """An import's hold named as a process ``pid`` of ``host`` (this machine) names it."""
    return f"{host or socket.gethostname()}:{pid}:sbefore:himport"


@pytest.mark.postgres
def test_an_import_under_way_through_one_is_seen_so_through_the_other(
    on_servers: tuple[BaseApp, BaseApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = on_servers
    export = tmp_path / "notes.zip"
    export_index(indexed(first, tmp_path / "docs"), export, identity(first))
    seen: list[tuple[str | None, list[str], str | None, bool]] = []
    copy_checked = importer._copy_checked

    def looked_at_from_the_other(
        archive: zipfile.ZipFile, member: str, target: Path, partial: Path
    ) -> None:
        if not seen:
            there = file_index(second, "Imported")
            state, notes, busy = there.import_state(), there.check().notes, there.busy_with()
            # The import's lock, seen from a folder that has no file of it: the database's.
            seen.append((state, notes, busy, there.work_locks.is_busy(IMPORT_LOCK)))
        copy_checked(archive, member, target, partial)

    monkeypatch.setattr(importer, "_copy_checked", looked_at_from_the_other)
    index, report = import_index(
        first.indices, export, identity(first), type_id=FILE_INDEX, name="Imported"
    )

    ((state, notes, busy, locked),) = seen
    assert state == "under way" and locked
    assert "an import is filling it right now" in notes
    assert busy is not None and busy.startswith("an import is still filling it")
    assert report.sources == 3 and import_mark(first.indices.engine, index.id) is None
    there = file_index(second, "Imported")
    assert there.import_state() is None and there.busy_with() is None


@pytest.mark.postgres
def test_another_machines_import_is_under_way_while_its_lock_is_held(
    on_servers: tuple[BaseApp, BaseApp],
) -> None:
    """Its process cannot be looked up from here; its database session holds the lock
    while it lives, and a killed one's session ends with it."""
    first, second = on_servers
    index = _made_by_an_import(first, _holder_of(4242, host="elsewhere"))
    importing = AdvisoryLocks(first.indices.engine)
    assert importing.try_acquire(f"file-index/{index.id}/import")
    assert file_index(second, "Imported").import_state() == "under way"

    importing.release(f"file-index/{index.id}/import")
    there = file_index(second, "Imported")
    assert there.import_state() == "interrupted"
    assert [p.kind for p in there.check().problems] == ["interrupted_import"]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("servers", marks=pytest.mark.postgres)])
def test_an_import_of_this_machine_is_judged_by_its_process(
    store: str, request: pytest.FixtureRequest
) -> None:
    """Under way while its process lives, half made once it is killed: then the other
    folder's ``index check`` reports it, and an export refuses it."""
    first, second = request.getfixturevalue("on_sqlite" if store == "sqlite" else "on_servers")
    importer_process = subprocess.Popen(["sleep", "60"])
    try:
        _made_by_an_import(first, _holder_of(importer_process.pid))
        assert file_index(second, "Imported").import_state() == "under way"
    finally:
        os.kill(importer_process.pid, signal.SIGKILL)
        importer_process.wait()

    there = file_index(second, "Imported")
    assert there.import_state() == "interrupted"
    (problem,) = there.check().problems
    assert problem.kind == "interrupted_import" and problem.message.startswith(HALF_MADE)
    assert there.busy_with() is None  # deleting it is what is left to do
    second.indices.delete(there.id)
    assert [i.name for i in first.indices.indices] == ["My files"]


def test_on_sqlite_another_machines_import_is_left_to_its_own_folder(
    on_sqlite: tuple[BaseApp, BaseApp],
) -> None:
    """Without locks every process sees, whether it lives cannot be known from here:
    nothing of it is deleted on a guess."""
    first, second = on_sqlite
    _made_by_an_import(first, _holder_of(4242, host="elsewhere"))
    assert file_index(second, "Imported").import_state() == "under way"
