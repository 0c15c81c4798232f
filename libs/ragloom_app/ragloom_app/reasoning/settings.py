"""Builders of the user settings several reasoning modes share (see :data:`SettingSpec`)."""

from __future__ import annotations

from ragloom_app.reasoning.base import SettingSpec

__all__ = [
    "count_setting",
    "docsearch_top_k_setting",
    "focus_setting",
    "llm_name_setting",
    "steps_setting",
]


def count_setting(label: str, default: int, minimum: int, maximum: int, info: str) -> SettingSpec:
    """A whole number between ``minimum`` and ``maximum``."""
    return {
        "name": label,
        "value": default,
        "component": "number",
        "minimum": minimum,
        "maximum": maximum,
        "info": info,
    }


def docsearch_top_k_setting(default: int) -> SettingSpec:
    """How many passages one docsearch call returns."""
    return count_setting(
        "Passages per search", default, 1, 10, "Passages one docsearch call returns to the agent."
    )


def focus_setting(default: int) -> SettingSpec:
    """How many sentences of the found passages a search shows (0: whole passages)."""
    return count_setting(
        "Sentences shown per search",
        default,
        0,
        30,
        "Show the LLM only the sentences of the found passages nearest the query, each with "
        "its neighbours: shorter prompts. 0 shows whole passages.",
    )


def steps_setting(label: str, default: int, info: str, maximum: int = 10) -> SettingSpec:
    """A bounded count of steps."""
    return count_setting(label, default, 1, maximum, info)


def llm_name_setting(label: str, role: str) -> SettingSpec:
    """The name of an LLM in ``LLMS`` for one role (empty: the chat's LLM)."""
    return {
        "name": label,
        "value": "",
        "component": "text",
        "info": f"Name of an LLM in LLMS for the {role}; empty uses the chat's LLM.",
    }
