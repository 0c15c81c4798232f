"""Follow a data folder that was moved: its files' stored paths point where it is now.

The database records where each indexed file's stored copy is, as a path through the data
folder (``<data folder>/indices/<id>/files/<sha256>.<ext>``): that path also tells which
data folder stored it, when app processes with folders of their own share PostgreSQL.
A data folder moved to another path (a bigger disk, a renamed home) would then find none
of its copies: every file would look stored through another folder, so a reindex would
fail it as lost and an export would leave it out.

So each start notes in the folder where it is (:data:`LOCATION_FILE`). A start that finds
the folder elsewhere than noted moves the stored paths under the old place to the new one,
in one transaction, and then notes the new place (a crash between the two does it again,
finding nothing left to move). A folder *copied* elsewhere is not followed while the
original is there, since that one still serves its own rows: each start logs it, and once
the original is gone, the next start takes the copy for a move.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom_app.db.models import Source

__all__ = ["LOCATION_FILE", "follow_moved_data_folder"]

logger = logging.getLogger(__name__)

#: Where a data folder notes where it was at its last start (the path it was given, made
#: absolute, and the same path with its links resolved).
LOCATION_FILE = "location.json"


def follow_moved_data_folder(engine: Engine, data_dir: Path) -> int:
    """Move the stored paths of a data folder found elsewhere than at its last start to
    where it is now; how many were moved. Notes where it is for the next start."""
    here = _places(data_dir)
    noted = _noted_places(data_dir)
    moved = 0
    if noted and not noted & here:
        if any(Path(place).is_dir() for place in noted):
            # Noted as it was: once the original is gone, a start takes this for a move.
            logger.warning(
                "the data folder %s was at %s at its last start, and that folder is still "
                "there: taken for a copy, whose files stay the original's until it is gone",
                data_dir,
                min(noted),
            )
            return 0
        moved = _move_stored_paths(engine, noted, data_dir.absolute())
        logger.warning(
            "the data folder was moved from %s to %s: %d stored file paths follow it",
            min(noted),
            data_dir.absolute(),
            moved,
        )
    if noted != here:
        _note_places(data_dir, here)
    return moved


def _places(data_dir: Path) -> set[str]:
    return {str(data_dir.absolute()), str(data_dir.resolve())}


def _noted_places(data_dir: Path) -> set[str]:
    try:
        noted = json.loads((data_dir / LOCATION_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError):
        logger.warning("%s in %s cannot be read; noted again", LOCATION_FILE, data_dir)
        return set()
    places = noted.get("places") if isinstance(noted, dict) else None
    if not isinstance(places, list) or not all(isinstance(p, str) for p in places):
        return set()
    return set(places)


def _note_places(data_dir: Path, places: set[str]) -> None:
    note = data_dir / LOCATION_FILE
    # A name of this process's: an app and a worker may start on one folder at once.
    partial = note.with_name(f".{LOCATION_FILE}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps({"places": sorted(places)}), encoding="utf-8")
        partial.replace(note)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        logger.warning("could not note where the data folder is: %s", exc.strerror or exc)


def _move_stored_paths(engine: Engine, old_places: set[str], new_place: Path) -> int:
    """Point every stored path under one of ``old_places`` to the same file under
    ``new_place``, in one transaction."""
    moved = 0
    with Session(engine) as session:
        rows = session.exec(select(Source).where(col(Source.stored_path).is_not(None)))
        for source in rows:
            stored = Path(source.stored_path or "")
            old = next((Path(p) for p in old_places if stored.is_relative_to(p)), None)
            if old is not None:
                source.stored_path = str(new_place / stored.relative_to(old))
                session.add(source)
                moved += 1
        session.commit()
    return moved
