"""An indexed app and its export, for the tests of ``ragloom index export`` and
``import`` (tests/app/index/test_transfer*.py)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.transfer import embedding_identity, export_index
from tests.helpers.api_server import replay_app

__all__ = [
    "DOCUMENTS",
    "FILE_INDEX",
    "exported",
    "file_index",
    "identity",
    "indexed",
    "manifest_with",
    "rewritten",
]

FILE_INDEX = "ragloom_app.index.file.FileIndex"
DOCUMENTS = {
    "reactor.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin. It is cooled by "
    "liquid neon pumped at 12 litres a minute.",
    "canteen.md": "# Canteen\n\nThe canteen serves soup on Tuesdays. The soup of the day "
    "costs 4.50 credits.",
    "badge.txt": "Visitors wear a yellow badge; staff wear a blue one.\n\nBadges expire after "
    "90 days and are renewed at the front desk.",
}


def identity(app: BaseApp) -> dict[str, object]:
    """The embedding identity an export of ``app`` carries."""
    spec = app.settings.embeddings[app.settings.default_embedding]
    return embedding_identity(spec, app.embeddings().dimension)


def file_index(app: BaseApp, name: str = "My files") -> FileIndex:
    """``app``'s file index ``name``."""
    index = app.indices.get(name)
    assert isinstance(index, FileIndex)
    return index


def indexed(app: BaseApp, folder: Path) -> FileIndex:
    """``app``'s "My files" with :data:`DOCUMENTS` indexed (written into ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = file_index(app)
    outcomes = index.get_indexing_pipeline({}).run([folder / n for n in DOCUMENTS])
    assert [o.status for o in outcomes] == ["indexed"] * 3
    return index


@pytest.fixture
def exported(tmp_path: Path) -> tuple[BaseApp, Path]:
    """An app with :data:`DOCUMENTS` indexed, and its export ``good.zip``."""
    app = replay_app(tmp_path / "app")
    export_index(indexed(app, tmp_path / "docs"), tmp_path / "good.zip", identity(app))
    return app, tmp_path / "good.zip"


def rewritten(good: Path, target: Path, change: dict[str, bytes | None]) -> Path:
    """A copy of ``good`` with members replaced (or, for None, left out) or added."""
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            if info.filename not in change:
                out.writestr(info.filename, source.read(info.filename))
        for name, data in change.items():
            if data is not None:
                out.writestr(name, data)
    return target


def manifest_with(good: Path, **values: object) -> bytes:
    """The manifest of the export ``good`` with ``values`` changed."""
    with zipfile.ZipFile(good) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    manifest.update(values)
    return json.dumps(manifest).encode()
