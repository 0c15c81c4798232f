"""Every built-in reader and the zip expander refuse an empty file and one that cannot be
read in the same words (loaders.base.read_bytes and file_size)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.loaders import (
    EmptyDocumentError,
    LoaderError,
    UnreadableFileError,
    default_readers,
    expand_zip,
)

READERS = default_readers()


def _open(extension: str, path: Path) -> None:
    if extension == ".zip":
        expand_zip(path, path.parent / "unpacked")
    else:
        READERS[extension].read(path)


@pytest.mark.parametrize("extension", [*sorted(READERS), ".zip"])
def test_an_empty_file_is_refused_as_empty(extension: str, tmp_path: Path) -> None:
    path = tmp_path / f"empty{extension}"
    path.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        _open(extension, path)
    assert info.value.reason == "the file is empty"
    assert info.value.path == path


@pytest.mark.parametrize("extension", [*sorted(READERS), ".zip"])
def test_a_file_that_cannot_be_read_is_unreadable(extension: str, tmp_path: Path) -> None:
    path = tmp_path / f"gone{extension}"  # never written: reading it fails with an OSError
    with pytest.raises(UnreadableFileError) as info:
        _open(extension, path)
    assert info.value.reason.startswith("cannot read the file: ")
    assert isinstance(info.value, LoaderError)
