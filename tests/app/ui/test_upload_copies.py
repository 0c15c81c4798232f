"""The Files tab's upload handling: the file count limit, and gradio's copies deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gradio as gr
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.ui.files_tab import FilesHandlers, discard_upload_copies
from tests.helpers.file_index import StoreSetup


def _upload(cache: Path, name: str, text: str) -> dict[str, object]:
    """A file as gradio keeps an upload: in a folder of its own, named by a hash."""
    folder = cache / f"hash-of-{name}"
    folder.mkdir(parents=True)
    (folder / name).write_text(text)
    return {"path": str(folder / name), "orig_name": name, "meta": {"_type": "gradio.FileData"}}


@pytest.fixture
def handlers(tmp_path: Path, stores: StoreSetup) -> Iterator[FilesHandlers]:
    """The Files tab's handlers of an app on the embedded stores, then on the servers."""
    settings = stores.app_settings(
        tmp_path / "data",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
    )
    app = BaseApp(settings).start()
    yield FilesHandlers(app, upload_cache=tmp_path / "cache", max_files=2)
    app.jobs.close()  # uploads started its job queue


def test_copies_go_once_indexed_and_the_users_files_stay(
    handlers: FilesHandlers, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    own = tmp_path / "mine" / "own.md"
    own.parent.mkdir()
    own.write_text("# Own\n\nA file of the user's, indexed by path.\n")
    uploaded = _upload(cache, "notes.md", "# Notes\n\nUploaded notes.\n")
    results, _, _ = handlers.index_files(
        "My files", [uploaded, str(own)], progress=lambda *a, **k: None
    )
    assert "2 indexed" in results
    assert list(cache.iterdir()) == []  # the copy and its folder
    assert own.read_text().startswith("# Own")


def test_too_many_files_are_refused_whole(handlers: FilesHandlers, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    files = [_upload(cache, f"n{i}.md", f"# Note {i}\n") for i in range(3)]
    with pytest.raises(gr.Error, match=r"Too many files in one upload: 3\. The limit is 2 files"):
        handlers.index_files("My files", files, progress=lambda *a, **k: None)
    assert handlers.app.indices.indices[0].list_sources() == []
    # Pressed again with fewer of the same files, it indexes them (the copies were kept).
    results, _, _ = handlers.index_files("My files", files[:2], progress=lambda *a, **k: None)
    assert "2 indexed" in results


def test_only_files_inside_the_cache_are_deleted(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shared = cache / "same-hash"
    shared.mkdir(parents=True)
    (shared / "a.md").write_text("a")
    (shared / "b.md").write_text("b")  # another upload of the same folder
    outside = tmp_path / "elsewhere.md"
    outside.write_text("keep")
    sneaky = cache / ".." / "elsewhere.md"
    removed = discard_upload_copies([shared / "a.md", outside, sneaky], cache)
    assert removed == 1
    assert outside.exists()
    assert [p.name for p in shared.iterdir()] == ["b.md"]  # its folder stays for b.md
    assert discard_upload_copies([outside], None) == 0
