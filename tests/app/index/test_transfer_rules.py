"""``ragloom index export`` and ``import`` keep the rules the rest of Ragloom keeps: an
export holds what its import needs (every file's stored copy), and what it cannot write
is said in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.transfer import IndexTransferError, embedding_identity, export_index
from tests.helpers.api_server import replay_app

DOCUMENTS = {
    "reactor.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.",
    "badge.txt": "Visitors wear a yellow badge; staff wear a blue one.",
}


def _identity(app: BaseApp) -> dict[str, object]:
    spec = app.settings.embeddings[app.settings.default_embedding]
    return embedding_identity(spec, app.embeddings().dimension)


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[BaseApp, FileIndex]:
    """An app whose "My files" holds :data:`DOCUMENTS`."""
    app = replay_app(tmp_path / "app")
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    outcomes = index.get_indexing_pipeline({}).run([folder / n for n in DOCUMENTS])
    assert [o.status for o in outcomes] == ["indexed"] * len(DOCUMENTS)
    return app, index


def test_an_index_missing_a_stored_copy_is_not_exported_until_it_is_repaired(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """Its import would refuse the file (it is indexed again, and checked, from its
    copy): the export says what to do instead of writing what cannot be imported."""
    app, index = indexed
    for stored in index.files_dir.iterdir():
        if stored.suffix == ".md":
            stored.unlink()
    target = tmp_path / "export.zip"
    with pytest.raises(
        IndexTransferError, match=r"stored copy of 'reactor.md' is missing.*--repair"
    ):
        export_index(index, target, _identity(app))
    assert not target.exists()
    index.check(repair=True)  # fails the file: an export leaves it out
    report = export_index(index, target, _identity(app))
    assert (report.sources, report.skipped) == (1, 1)
