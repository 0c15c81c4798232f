"""Saved chat defaults: stored per user, read back against what the app offers now."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragloom_app.accounts.preferences import (
    MAX_SAVED_BYTES,
    ChatDefaults,
    ChatDefaultsStore,
    SettingsTooLargeError,
)
from ragloom_app.db import create_db_engine

MODES = {
    "fullqa": {"top_k": {"value": 3, "component": "number"}},
    "rewoo": {
        "max_steps": {"value": 3, "component": "number"},
        "planner_llm": {"value": "", "component": "dropdown", "choices": [("Chat's", ""), "big"]},
    },
}
INDICES = {"Team": {"mmr": {"value": False, "component": "checkbox"}}}


def test_each_user_reads_back_its_own(tmp_path: Path) -> None:
    store = ChatDefaultsStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    mine = ChatDefaults(mode="rewoo", modes={"rewoo": {"max_steps": 5}}, indices={"Team": {}})
    store.save("alice", mine)
    assert store.get("alice") == mine
    assert store.get("bob") == ChatDefaults()
    store.save("alice", ChatDefaults(mode="fullqa"))  # replaced, not merged
    assert store.get("alice") == ChatDefaults(mode="fullqa")


def test_what_is_no_longer_offered_is_forgotten() -> None:
    saved = ChatDefaults(
        mode="gone-mode",
        modes={
            "fullqa": {"top_k": 7, "renamed_key": 1},
            "rewoo": {"planner_llm": "removed-llm", "max_steps": 4},
            "gone-mode": {"x": 1},
        },
        indices={"Team": {"mmr": True}, "Deleted": {"mmr": True}},
    )
    assert saved.offered(MODES, INDICES) == ChatDefaults(
        mode=None,
        modes={"fullqa": {"top_k": 7}, "rewoo": {"max_steps": 4}},
        indices={"Team": {"mmr": True}},
    )
    kept = ChatDefaults(mode="rewoo", modes={"rewoo": {"planner_llm": "big"}})
    assert kept.offered(MODES, INDICES) == kept


def test_a_value_the_server_would_refuse_is_forgotten_and_the_rest_typed() -> None:
    """The server's typed check, as a question's settings meet it: a saved NaN given back
    would fail every question."""
    bounded = {"fullqa": {"top_k": {"value": 3, "component": "number", "minimum": 1}}}
    saved = ChatDefaults(
        modes={"fullqa": {"top_k": math.nan}, "rewoo": {"max_steps": "4", "planner_llm": 3}},
        indices={"Team": {"mmr": "maybe"}},
    )
    assert saved.offered({**MODES, **bounded}, INDICES) == ChatDefaults(
        modes={"rewoo": {"max_steps": 4}}
    )
    for wrong in (0, math.inf, "three", True):
        assert ChatDefaults(modes={"fullqa": {"top_k": wrong}}).offered(bounded, {}).modes == {}


@pytest.mark.parametrize(
    "stored", [None, [], "text", {"mode": 3, "modes": {"a": 1}, "indices": []}]
)
def test_a_malformed_row_reads_as_no_defaults(stored: object) -> None:
    assert ChatDefaults.from_dict(stored) == ChatDefaults()


def test_defaults_past_the_bound_are_refused_and_nothing_is_saved(tmp_path: Path) -> None:
    store = ChatDefaultsStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    store.save("alice", ChatDefaults(mode="fullqa"))
    huge = ChatDefaults(modes={"fullqa": {"note": "x" * MAX_SAVED_BYTES}})
    with pytest.raises(SettingsTooLargeError, match="at most 65,536 are kept"):
        store.save("alice", huge)
    assert store.get("alice") == ChatDefaults(mode="fullqa")
