"""The data folder: created, and kept, readable by its owner alone.

It holds every document and conversation, so nobody else on the machine may read it.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from ragloom_app.settings import SettingsError

__all__ = ["PRIVATE_UMASK", "make_private_folder"]

logger = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
"""Bits the process never grants: what it creates is readable by its owner alone."""


def make_private_folder(folder: Path) -> None:
    """Create ``folder`` (mode 0700) and keep what this process creates owner-only.

    The data folder holds every document and conversation, so nobody else on the machine
    may read it. The umask covers what is created inside it later by SQLite, Chroma and
    the indices (it is the process's: Ragloom's own processes create nothing for others).
    A folder that exists already with looser rights is tightened, with a warning. One that
    belongs to another user, or stays open to others, is refused (:class:`SettingsError`):
    its owner could read, or swap, every document put there.
    """
    previous = os.umask(PRIVATE_UMASK)
    os.umask(previous | PRIVATE_UMASK)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise SettingsError(
            f"DATA_DIR: {folder} belongs to another user (uid {info.st_uid}); Ragloom keeps "
            "documents and conversations there and uses only a folder of its own user: "
            "choose another DATA_DIR"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & PRIVATE_UMASK:
        try:
            folder.chmod(0o700)
        except OSError as exc:
            raise SettingsError(
                f"DATA_DIR: {folder} is open to other users (mode {mode:o}) and cannot be "
                f"made private: {exc.strerror or exc}"
            ) from exc
        if stat.S_IMODE(folder.stat().st_mode) & PRIVATE_UMASK:
            # Some file systems (FAT, drvfs, network mounts) accept chmod and change nothing.
            raise SettingsError(
                f"DATA_DIR: {folder} is open to other users (mode {mode:o}) and its file "
                "system keeps it so: choose a DATA_DIR on a file system with Unix permissions"
            )
        logger.warning(
            "the data folder %s was open to other users (mode %o): now owner-only (700)",
            folder,
            mode,
        )
