"""``recover_in_background``: the recovery waits for the server to listen, and gives up;
the job queue it starts afterwards is not started once the server stopped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.settings import AppSettings
from ragloom_app.ui.server import QueueSwitch, recover_in_background


@pytest.fixture
def app(tmp_path: Path) -> Iterator[BaseApp]:
    started = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    yield started
    started.jobs.close()  # the recovery starts the job queue once done


def test_the_recovery_runs_only_once_the_server_listens(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    listening = threading.Event()
    ran: list[bool] = []

    def recover() -> list[FileOutcome]:
        ran.append(listening.is_set())
        return []

    monkeypatch.setattr(app, "recover_indices", recover)
    thread = recover_in_background(app, listening.is_set)
    time.sleep(0.3)
    assert ran == [] and thread.is_alive()
    listening.set()
    thread.join(timeout=10)
    assert ran == [True] and not thread.is_alive()


def test_a_server_that_never_listens_gets_no_recovery(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(app, "recover_indices", lambda: pytest.fail("recovered without a server"))
    with caplog.at_level(logging.WARNING):
        recover_in_background(app, lambda: False, wait=0.2).join(timeout=10)
    assert "the server did not listen within 0.2 s; interrupted files were not recovered" in (
        caplog.text
    )


def test_a_server_stopped_during_its_recovery_starts_no_job_queue(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The queue used to be started after the recovery whatever happened meanwhile: a
    # server closed first left its worker and sweeper threads running for good.
    recovering, finish = threading.Event(), threading.Event()

    def slow_recovery() -> list[FileOutcome]:
        recovering.set()
        assert finish.wait(10)
        return []

    monkeypatch.setattr(app, "recover_indices", slow_recovery)
    before = set(threading.enumerate())
    queue = QueueSwitch(app)
    thread = recover_in_background(app, lambda: True, queue=queue)
    assert recovering.wait(10)
    queue.stop()  # as the server's close does
    finish.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    started = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert not [name for name in started if name.startswith("ragloom-job")], started
