"""An idle server stays idle: gradio's queue does not wake up every millisecond."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.settings import AppSettings
from ragloom_app.ui.server import serve
from tests.helpers.ports import free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for a thread's CPU")

TICKS_A_SECOND = 100  # the kernel's USER_HZ, in which /proc gives CPU time


def _cpu_ticks(thread: threading.Thread) -> int:
    """User and system CPU time the thread has used, in ticks."""
    stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_an_idle_server_uses_almost_no_cpu(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    running = serve(app, port=free_port(), first_run_docs=False, block=False, warm_up=False)
    try:
        web = next(t for t in threading.enumerate() if t.name == "ragloom-web")
        time.sleep(1.0)  # past the start-up's own work
        before, seconds = _cpu_ticks(web), 4.0
        time.sleep(seconds)
        used = (_cpu_ticks(web) - before) / TICKS_A_SECOND / seconds
    finally:
        running.close()
    # Polling every millisecond used 8 % of a core here; calm polling, under 1 %.
    assert used < 0.025, f"the idle web thread used {used:.1%} of a core"
