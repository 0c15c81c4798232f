"""Builders of the user settings several reasoning modes share (see :data:`SettingSpec`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom_app.errors import UserFacingError
from ragloom_app.reasoning.base import SettingSpec

__all__ = [
    "CHAT_LLM_CHOICE",
    "LLM_CHOICES",
    "ModeSettingsError",
    "count_setting",
    "docsearch_top_k_setting",
    "focus_setting",
    "grounding_setting",
    "llm_name_setting",
    "mode_settings_from_options",
    "offer_llms",
    "precheck_setting",
    "steps_setting",
    "typed_mode_settings",
]

LLM_CHOICES = "llms"
"""The ``choices_from`` of a setting whose choices are the LLMs a user may choose."""

CHAT_LLM_CHOICE = ("The chat's LLM", "")
"""The first choice of every LLM setting: the request's own LLM (``DEFAULT_LLM``)."""


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


def precheck_setting() -> SettingSpec:
    """Whether the mode declines, without the model, a question naming specifics (an
    identifier, an option, a version, a quoted phrase, a rare word) no document holds."""
    return {
        "name": "Decline when the documents lack what the question names",
        "value": True,
        "component": "checkbox",
        "info": "A question naming a function, option, version or rare word that no indexed "
        "document mentions is answered without the model: 'The documents do not mention …', "
        "with the closest passages.",
    }


def grounding_setting() -> SettingSpec:
    """Whether the answer's specifics are checked against the passages it cites (on by
    default; the app's ``GROUNDING_CHECK`` = False turns it off for every mode)."""
    return {
        "name": "Check the answer against its sources",
        "value": True,
        "component": "checkbox",
        "info": "Mark each sentence whose numbers, versions, names or quotes are not in the "
        "passages it cites, and decline an answer none of whose claims is found.",
    }


def steps_setting(label: str, default: int, info: str, maximum: int = 10) -> SettingSpec:
    """A bounded count of steps."""
    return count_setting(label, default, 1, maximum, info)


def llm_name_setting(label: str, role: str) -> SettingSpec:
    """The LLM for one role, chosen among those the admin offers (empty: the chat's LLM).

    The spec lists only the chat's LLM; :func:`offer_llms` adds the others the app offers
    (``SELECTABLE_LLMS``) before the form is drawn. The app refuses any other name sent.
    """
    return {
        "name": label,
        "value": "",
        "component": "dropdown",
        "choices": [CHAT_LLM_CHOICE],
        "choices_from": LLM_CHOICES,
        "info": f"The LLM for the {role}, among those the administrator offers.",
    }


def offer_llms(specs: Mapping[str, SettingSpec], names: Sequence[str]) -> dict[str, SettingSpec]:
    """``specs`` with every LLM setting offering the chat's LLM and ``names`` (the app's
    selectable LLMs; the first, the default LLM, is the chat's)."""
    chat = (f"{CHAT_LLM_CHOICE[0]} ({names[0]})", "") if names else CHAT_LLM_CHOICE
    others = [(name, name) for name in names[1:]]
    return {
        key: {**spec, "choices": [chat, *others]}
        if spec.get("choices_from") == LLM_CHOICES
        else spec
        for key, spec in specs.items()
    }


class ModeSettingsError(UserFacingError, ValueError):
    """A mode setting given by name (``ragloom ask --setting``) that the mode does not have
    or does not allow."""


def mode_settings_from_options(
    specs: Mapping[str, SettingSpec], options: Sequence[str]
) -> dict[str, Any]:
    """The mode settings of ``KEY=VALUE`` options, each typed by its spec (a number, a
    flag, one of the choices); a key the mode lacks or a value it refuses raises
    :class:`ModeSettingsError` naming the mode's settings. A setting whose choices are the
    LLMs (``choices_from``) stays text: the app refuses an LLM it does not offer."""
    given: dict[str, str] = {}
    for option in options:
        key, equals, value = (part.strip() for part in option.partition("="))
        if not equals or not key:
            raise ModeSettingsError(f"a mode setting is KEY=VALUE (e.g. top_k=5), got {option!r}")
        given[key] = value
    return typed_mode_settings(specs, given)


def typed_mode_settings(
    specs: Mapping[str, SettingSpec], given: Mapping[str, Any]
) -> dict[str, Any]:
    """``given`` mode settings (typed values, or text as the CLI has them) checked and
    typed by their specs, as :func:`mode_settings_from_options` does; raises
    :class:`ModeSettingsError` for a key the mode lacks or a value it refuses."""
    from ragloom_app.index.settings import IndexSettingsError, typed_setting_value

    values: dict[str, Any] = {}
    for key, value in given.items():
        spec = specs.get(key)
        if spec is None:
            known = ", ".join(specs) or "none"
            raise ModeSettingsError(f"no such setting: {key} (this mode's settings: {known})")
        if spec.get("choices_from"):
            spec = {**spec, "component": "text"}
        try:
            values[key] = typed_setting_value(key, spec, value)
        except IndexSettingsError as exc:
            raise ModeSettingsError(str(exc)) from None
    return values
