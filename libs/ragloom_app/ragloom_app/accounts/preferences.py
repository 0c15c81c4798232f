"""Each user's saved chat defaults: the reasoning mode, each mode's settings (the LLM among
them) and each index's search settings.

Saved values are read back against what the app offers *now*: a mode, an index or a
setting that is gone is dropped, and a value the app's typed check refuses now (a choice
no longer offered, such as an LLM the admin took off ``SELECTABLE_LLMS``; a number out of
bounds or not finite; a value of the wrong type) falls back to its default, so a stale
default never breaks a question. What one user may save is bounded (:data:`MAX_SAVED_BYTES`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from ragloom_app.db.models import UserSettingsRecord
from ragloom_app.errors import UserFacingError
from ragloom_app.index.settings import IndexSettingsError, typed_setting_value

__all__ = ["MAX_SAVED_BYTES", "ChatDefaults", "ChatDefaultsStore", "SettingsTooLargeError"]

MAX_SAVED_BYTES = 64 * 1024
"""The most one user's saved defaults may take, as JSON."""

Specs = Mapping[str, Mapping[str, Mapping[str, Any]]]
"""Owner (a mode id, an index name) → setting key → its spec."""


class SettingsTooLargeError(UserFacingError, ValueError):
    """The defaults to save are past :data:`MAX_SAVED_BYTES`."""


@dataclass(frozen=True)
class ChatDefaults:
    """A user's chat defaults: ``mode`` (a mode id, or ``None`` for the app's default),
    ``modes`` (mode id → its settings), ``indices`` (index name → its search settings)."""

    mode: str | None = None
    modes: dict[str, dict[str, Any]] = field(default_factory=dict)
    indices: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape stored."""
        return {"mode": self.mode, "modes": self.modes, "indices": self.indices}

    @classmethod
    def from_dict(cls, data: Any) -> ChatDefaults:
        """Read back a stored shape; anything malformed is left out, never raised."""
        if not isinstance(data, dict):
            return cls()
        mode = data.get("mode")
        return cls(
            mode=mode if isinstance(mode, str) else None,
            modes=_nested(data.get("modes")),
            indices=_nested(data.get("indices")),
        )

    def offered(self, modes: Specs, indices: Specs) -> ChatDefaults:
        """These defaults limited to the ``modes`` and ``indices`` offered now, by their
        specs: unknown owners and keys dropped, values the specs refuse now forgotten
        (the others typed as the specs say)."""
        return ChatDefaults(
            mode=self.mode if self.mode in modes else None,
            modes=_offered(self.modes, modes),
            indices=_offered(self.indices, indices),
        )


def _nested(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): dict(v) for k, v in value.items() if isinstance(v, dict)}


def _offered(saved: Mapping[str, Mapping[str, Any]], specs: Specs) -> dict[str, dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    for owner, values in saved.items():
        owner_specs = specs.get(owner)
        if owner_specs is None:
            continue
        good: dict[str, Any] = {}
        for key, value in values.items():
            if key not in owner_specs:
                continue
            # The server's own check, choices included (an LLM setting's are the LLMs
            # offered now): a saved NaN given back would fail every question it answers.
            try:
                good[key] = typed_setting_value(key, dict(owner_specs[key]), value)
            except IndexSettingsError:
                continue
        if good:
            kept[owner] = good
    return kept


class ChatDefaultsStore:
    """Saved chat defaults, one row per user, in the app database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, user_id: str) -> ChatDefaults:
        """``user_id``'s saved defaults (empty when it saved none)."""
        with Session(self.engine) as session:
            record = session.get(UserSettingsRecord, user_id)
            return ChatDefaults.from_dict(record.data if record is not None else None)

    def save(self, user_id: str, defaults: ChatDefaults) -> None:
        """Replace ``user_id``'s saved defaults; :class:`SettingsTooLargeError` past
        :data:`MAX_SAVED_BYTES` (nothing is saved then)."""
        data = defaults.to_dict()
        size = len(json.dumps(data, default=str).encode())
        if size > MAX_SAVED_BYTES:
            raise SettingsTooLargeError(
                f"the settings take {size:,} bytes; at most {MAX_SAVED_BYTES:,} are kept"
            )
        with Session(self.engine) as session:
            record = session.get(UserSettingsRecord, user_id) or UserSettingsRecord(user_id=user_id)
            record.data = data
            record.updated_at = datetime.now(UTC)
            session.add(record)
            session.commit()
