"""File readers that misbehave, for tests that the app survives them.

They are module-level classes, so they pickle by name and run in the readers sandbox like
any plugin's reader. Each is registered for an extension of its own. A file they read
holds the path of a file to write the reading process's id to, so a test can check that
the worker that ran it is gone (the index reads its stored copy, not the upload).
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

from ragloom.loaders import LoaderError
from ragloom.schema import Page

__all__ = [
    "FloodReader",
    "HungryReader",
    "SegfaultReader",
    "SleepyReader",
    "WordyReader",
    "worker_pid",
]


def _note_pid(path: Path) -> None:
    Path(path.read_text().strip()).write_text(str(os.getpid()))


def worker_pid(pid_file: Path) -> int:
    """The process id a hostile reader wrote to ``pid_file``."""
    return int(pid_file.read_text())


class SegfaultReader:
    """Crashes its process as a bug in a native library would (SIGSEGV)."""

    extensions = (".segv",)

    def read(self, path: Path) -> list[Page]:
        _note_pid(path)
        ctypes.string_at(0)
        raise AssertionError("unreachable")


class HungryReader:
    """Allocates memory without end.

    The blocks are zeroed by the kernel on first touch, so they take address space at once
    (what the sandbox limits) but little of the test machine's memory.
    """

    extensions = (".hog",)

    def read(self, path: Path) -> list[Page]:
        _note_pid(path)
        blocks = []
        while True:
            blocks.append(bytes(64 << 20))  # calloc: fresh zero pages, not touched


class SleepyReader:
    """Never returns."""

    extensions = (".sleep",)

    def read(self, path: Path) -> list[Page]:
        _note_pid(path)
        while True:
            time.sleep(1)


class CountedSleepyReader:
    """Never returns, and adds a line to the file its input names at each read: how many
    times a file was read, whatever the machine's speed."""

    extensions = (".sleep",)

    def read(self, path: Path) -> list[Page]:
        with Path(path.read_text().strip()).open("a") as reads:
            reads.write(f"{os.getpid()}\n")
        while True:
            time.sleep(1)


class FloodReader:
    """Returns ten million pages of text: ten million chunks' worth."""

    extensions = (".flood",)

    def read(self, path: Path) -> list[Page]:
        _note_pid(path)
        return [Page("The harbour pumps run at night.", number=1)] * 10_000_000


class WordyReader:
    """Refuses every file with a reason of 2 MB, as a reader quoting a whole file might."""

    extensions = (".wordy",)

    def read(self, path: Path) -> list[Page]:
        raise LoaderError("the table of contents is broken: " + "contents " * 250_000, path)
