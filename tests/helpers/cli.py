"""The ``ragloom`` command run as a user runs it: a subprocess over a data folder and a
settings file, to its end, with its output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["FLOWSETTINGS", "PROJECT", "cli_env", "run_python", "run_ragloom"]

PROJECT = Path(__file__).resolve().parents[2]
FLOWSETTINGS = PROJECT / "flowsettings.py"


def cli_env(data_dir: Path, settings: Path = FLOWSETTINGS) -> dict[str, str]:
    """This process's environment with Ragloom's data folder and settings file set."""
    return {**os.environ, "RAGLOOM_DATA_DIR": str(data_dir), "RAGLOOM_SETTINGS": str(settings)}


def run_python(
    *args: str, env: Mapping[str, str], timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` (this interpreter) to its end, its output captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def run_ragloom(
    *args: str, env: Mapping[str, str], timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``ragloom ARGS`` to its end, its output captured as text."""
    return run_python("-m", "ragloom_app.cli", *args, env=env, timeout=timeout, cwd=cwd)
