"""The one registry of what the plugins (Ragloom's own included) registered, and by whom.

Every entry of every slot goes through :meth:`Registry.register`, which records its
owner and gives the only override warning: on a shared id the later registration wins.
"""

from __future__ import annotations

import logging
from typing import Any

from ragloom_app.plugins.slots import SLOTS, Slot

__all__ = ["Registry"]

logger = logging.getLogger(__name__)


class Registry:
    """Entries by slot kind and id, each with its owner (``"plugin x"``, ``"REASONINGS"``).

    :meth:`table` returns the live dict of one kind: the app reads its modes, tools,
    readers and models from these dicts.
    """

    def __init__(self) -> None:
        self._slots = {slot.kind: slot for slot in SLOTS}
        self._tables: dict[str, dict[str, Any]] = {slot.kind: {} for slot in SLOTS}
        self._owners: dict[tuple[str, str], str] = {}

    def table(self, kind: str) -> dict[str, Any]:
        """The entries of ``kind`` by id, in registration order (the dict itself)."""
        return self._tables[kind]

    def owner(self, kind: str, key: str) -> str | None:
        """Who registered the entry ``key`` of ``kind`` last (None: nobody)."""
        return self._owners.get((kind, key))

    def register(self, slot: Slot, key: str, value: Any, owner: str) -> str | None:
        """Register ``value`` as ``key``; returns the warning if it replaced another's entry.

        The later registration wins; the warning (also logged) names both owners.
        """
        table = self._tables[slot.kind]
        previous, before = table.get(key), self._owners.get((slot.kind, key), "the settings")
        table[key] = value
        self._owners[slot.kind, key] = owner
        if previous is None or previous is value or previous == value:
            return None
        warning = (
            f"{slot.label} {key!r} is registered by {before} and again by {owner}: "
            f"the later one ({owner}) wins"
        )
        logger.warning("%s", warning)
        return warning
