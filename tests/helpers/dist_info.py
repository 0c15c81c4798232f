"""Installed distributions made by hand: a ``*.dist-info`` folder with entry points.

Put the folder on ``sys.path`` and ``importlib.metadata`` finds the distribution as if
pip had installed it, without installing anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_dist_info"]


def write_dist_info(folder: Path, name: str, version: str, entry_points: Mapping[str, str]) -> Path:
    """A dist-info folder in ``folder`` declaring ``entry_points`` in the group ``ragloom``."""
    dist_info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    lines = "".join(f"{ep} = {value}\n" for ep, value in entry_points.items())
    (dist_info / "entry_points.txt").write_text(
        f"[console_scripts]\n{name}-tool = os:getcwd\n\n[ragloom]\n{lines}"
    )
    return dist_info
