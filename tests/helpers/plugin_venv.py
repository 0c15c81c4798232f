"""A throwaway virtual environment that sees the project's packages but installs its own.

A ``.pth`` file adds the running interpreter's site-packages (the project's .venv) with
``site.addsitedir``, so its editable installs work too; ``pip install`` then writes into
the throwaway environment only, and the shared .venv never holds a test's plugins.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

__all__ = ["make_plugin_venv"]

_WRAPPERS = {
    "pip": "-m pip",
    "ragloom": "-m ragloom_app.cli",
}


def make_plugin_venv(folder: Path) -> Path:
    """Create the environment in ``folder``; returns its ``bin`` folder.

    ``bin`` holds ``python`` and small ``pip`` and ``ragloom`` commands that run it.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next((folder / "lib").glob("python3*/site-packages"))
    shared = sysconfig.get_paths()["purelib"]
    (site / "ragloom-shared.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    bin_dir = folder / "bin"
    for name, arguments in _WRAPPERS.items():
        command = bin_dir / name
        command.write_text(f'#!/bin/sh\nexec "{bin_dir / "python"}" {arguments} "$@"\n')
        command.chmod(0o755)
    return bin_dir
