"""Nothing phones home: the app indexes and answers using loopback addresses only."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm

PROBE = Path(__file__).with_name("privacy_probe.py")
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$")


def _clean_environment() -> dict[str, str]:
    # The app must switch telemetry off by itself: remove what a developer may have set.
    names = (
        "GRADIO_ANALYTICS_ENABLED",
        "HF_HUB_DISABLE_TELEMETRY",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "ANONYMIZED_TELEMETRY",
        "DO_NOT_TRACK",
    )
    return {k: v for k, v in os.environ.items() if k not in names}


def test_app_connects_only_to_loopback(tmp_path: Path) -> None:
    document = tmp_path / "reactor.md"
    document.write_text("# Reactor\n\nThe reactor runs at 451 kelvin.\n", encoding="utf-8")
    out = tmp_path / "probe.json"
    command = [sys.executable, str(PROBE), str(tmp_path / "data"), str(document), str(out)]
    strace = shutil.which("strace")
    trace = tmp_path / "connect.trace"
    if strace:
        # The audit hook sees Python sockets; strace also sees native code and subprocesses.
        command = [strace, "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command]
    run = subprocess.run(
        command, env=_clean_environment(), capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-4000:]
    probe = json.loads(out.read_text())
    assert "451" in probe["answer"]
    # Unix sockets (the sandbox's fork server) are files on this machine: nothing leaves it.
    hosts = {host for kind, host in probe["destinations"] if kind != "unix"}
    assert hosts, "the probe recorded no connection at all: the hook did not run"
    assert {h for h in hosts if not LOOPBACK.match(h)} == set()
    if strace:
        inet = re.findall(
            r"sin6?_addr=inet_pton\(AF_INET6?, \"([^\"]+)\"\)|inet_addr\(\"([^\"]+)\"\)",
            trace.read_text(),
        )
        addresses = {a or b for a, b in inet}
        assert addresses, "strace recorded no inet connect: the trace was not parsed"
        assert {a for a in addresses if not LOOPBACK.match(a)} == set()
