"""Following one upload holds up no other: each page follows its job in a slot of its
own (``UPLOADS_FOLLOWED_AT_ONCE``), not the one slot creating and deleting indices take.

A live UI; the first upload's job is held in the worker until the test lets it go.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client, handle_file

from ragloom_app.app import BaseApp
from ragloom_app.jobs import runner
from tests.helpers.api_server import served
from tests.helpers.scripted_app import scripted_app


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[tuple[str, BaseApp]]:
    app = scripted_app(tmp_path, {"s": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}}, {})
    with served(app) as url:
        yield url, app


def test_a_second_upload_is_taken_while_the_first_is_followed(
    ui: tuple[str, BaseApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, app = ui
    held, go_on = threading.Event(), threading.Event()
    run_claimed = runner.JobRunner._run_claimed

    def hold_the_first(self: runner.JobRunner, *args: Any) -> Any:
        if not held.is_set():
            held.set()
            go_on.wait(60)
        return run_claimed(self, *args)

    monkeypatch.setattr(runner.JobRunner, "_run_claimed", hold_the_first)
    files = []
    for name in ("first.md", "second.md"):
        (tmp_path / name).write_text(f"# {name}\n\nThe {name} file.\n")
        files.append(handle_file(str(tmp_path / name)))
    first = Client(url, verbose=False).submit("My files", [files[0]], api_name="/index_files")
    assert held.wait(30)
    second = Client(url, verbose=False).submit("My files", [files[1]], api_name="/index_files")
    try:
        # The second upload became a job while the first was still followed.
        deadline = time.monotonic() + 20
        while len(app.jobs.jobs(None)) < 2:
            assert time.monotonic() < deadline, "the second upload waited for the first"
            time.sleep(0.1)
        assert not first.done()
    finally:
        go_on.set()
    first.result(timeout=60), second.result(timeout=60)
    names = {s["name"]: s["status"] for s in app.indices.get("My files").list_sources()}
    assert names == {"first.md": "indexed", "second.md": "indexed"}
