"""A stop of the app on purpose is not a failure of the file it was indexing.

Ctrl-C, the interpreter exiting, the readers sandbox closed at shutdown: the file waits
for the recovery, its attempt not counted (a crash counts: test_recovery.py).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragloom_app.index.file import attempts
from ragloom_app.settings import AppSettings
from tests.helpers.file_index import StoreSetup
from tests.helpers.recovery import raw_source, start_index


def test_a_stop_on_purpose_is_not_counted_as_an_attempt(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while `ragloom index add` embeds: the file waits for the recovery, uncounted.
    index = start_index(settings)
    pipeline = index.get_indexing_pipeline({})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "_flip", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run([upload])
    assert (raw_source(index).status, raw_source(index).attempts) == ("indexing", 0)
    monkeypatch.undo()
    (outcome,) = start_index(settings).recover()
    assert outcome.status == "indexed"
    assert raw_source(index).attempts == 1


def test_an_attempt_still_running_at_exit_is_taken_back(
    settings: AppSettings, upload: Path
) -> None:
    # `ragloom serve` shutting down while its background thread recovers a file.
    index = start_index(settings)
    started, release = threading.Event(), threading.Event()
    pipeline = index.get_indexing_pipeline({})
    original = pipeline.ingestor.embed

    def slow_embed(chunks: Any) -> Any:
        started.set()
        release.wait(30)
        return original(chunks)

    object.__setattr__(pipeline.ingestor, "embed", slow_embed)
    worker = threading.Thread(target=pipeline.run, args=([upload],), daemon=True)
    worker.start()
    assert started.wait(30)
    assert raw_source(index).attempts == 1
    attempts._take_back_underway()  # what atexit runs as the interpreter stops
    assert (raw_source(index).status, raw_source(index).attempts) == ("indexing", 0)
    release.set()
    worker.join(30)


def test_a_file_whose_reading_the_app_stops_is_neither_failed_nor_counted(
    tmp_path: Path, stores: StoreSetup
) -> None:
    # `ragloom serve` shutting down stops the readers sandbox under a file being read:
    # nothing is known of the file, so it waits for the recovery, its attempt uncounted.
    from ragloom.chunking import readers_sandbox
    from ragloom.loaders import default_readers
    from tests.helpers.file_index import hash_file_index
    from tests.helpers.hostile_readers import SleepyReader

    readers = {**default_readers(), ".sleep": SleepyReader()}
    index = hash_file_index(tmp_path / "data", readers, stores)
    slow = tmp_path / "slow.sleep"
    slow.write_text(str(tmp_path / "slow.pid"))
    raised: list[BaseException] = []

    def index_it() -> None:
        try:
            index.get_indexing_pipeline({}).run([slow])
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=index_it)
    worker.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "slow.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    readers_sandbox().close()  # what shutdown_sandboxes does at exit
    worker.join(30)
    assert [type(exc).__name__ for exc in raised] == ["SandboxStopped"]
    (source,) = index.list_sources()
    assert (source["status"], source["attempts"]) == ("queued", 0)
