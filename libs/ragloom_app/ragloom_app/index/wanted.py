"""The indices the settings' ``INDICES`` name: created as the app starts, if missing."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, select

from ragloom_app.db.models import IndexRecord
from ragloom_app.errors import user_error
from ragloom_app.settings import SettingsError

if TYPE_CHECKING:
    from ragloom_app.index.manager import IndexManager

__all__ = ["create_wanted"]

logger = logging.getLogger(__name__)


def create_wanted(manager: IndexManager, wanted: Sequence[Mapping[str, Any]]) -> None:
    """Create each index of ``wanted`` (``INDICES``) that the database does not hold yet;
    one whose type is not registered, or fails to create it, is left out."""
    with Session(manager.engine) as session:
        existing = {r.name for r in session.exec(select(IndexRecord))}
    for position, spec in enumerate(wanted):
        if "name" not in spec or "type" not in spec:
            raise SettingsError(f"INDICES[{position}]: needs 'name' and 'type', got {spec!r}")
        if spec["name"] in existing:
            continue
        if manager.type_registered(spec["name"], spec["type"]):
            _create_one(manager, position, spec)


def _create_one(manager: IndexManager, position: int, spec: Mapping[str, Any]) -> None:
    """Create an index of ``INDICES``; one whose type fails to create it is left out.

    Its config is checked by its type first, as one made in the UI is: a wrong one
    stops the start with a :class:`SettingsError` naming it (stored, it failed every
    upload to the index instead).
    """
    where = f"INDICES[{position}] ({spec['name']!r})"
    config = spec.get("config") or {}
    if not isinstance(config, Mapping):
        raise SettingsError(f"{where}: 'config' must be a dict, not {config!r}"[:300])
    try:
        config = manager.normalize_config(spec["type"], config)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None
    except Exception as exc:  # the type's own bug, not the settings': left out, as below
        failure = user_error(exc, f"Checking the index {spec['name']!r}", log=logger)
        manager.leave_out(spec["name"], failure.message, None)
        return
    try:
        manager.create(spec["name"], spec["type"], config)
    except Exception as exc:
        with Session(manager.engine) as session:
            made = session.exec(select(IndexRecord).where(IndexRecord.name == spec["name"]))
            if made.first() is not None:  # by another process starting beside this one
                logger.info("index %r was created by another process", spec["name"])
                return
        failure = user_error(exc, f"Creating the index {spec['name']!r}", log=logger)
        manager.leave_out(spec["name"], failure.message, None)
