"""``recover_in_background``: the recovery waits for the server to listen, and gives up."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.base import FileOutcome
from ragloom_app.settings import AppSettings
from ragloom_app.ui.server import recover_in_background


@pytest.fixture
def app(tmp_path: Path) -> BaseApp:
    return BaseApp(AppSettings(data_dir=tmp_path / "data")).start()


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
