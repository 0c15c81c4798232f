"""The rules what a plugin registers must meet, kept once for both of their readers.

The app applies them when it registers a plugin's entries (:mod:`ragloom_app.plugins.slots`:
a breach leaves the plugin out), and the contract checks for plugin authors apply the
same ones (:mod:`ragloom_app.testing`: a breach fails the author's test). Each raises
:class:`RuleError` naming the owner and the rule, and imports nothing heavy: the
``ragloom`` command reads the slots before it knows whether it starts the app.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

__all__ = [
    "COMPONENTS",
    "MAX_CHOICES",
    "MAX_HOOK_ENTRIES",
    "MAX_ID_CHARS",
    "MAX_MODE_DESCRIPTION_CHARS",
    "MAX_MODE_ID_CHARS",
    "MAX_MODE_NAME_CHARS",
    "MAX_SETTINGS",
    "MAX_SETTING_ID_CHARS",
    "MODE_ID_PATTERN",
    "RuleError",
    "check_reasoning_info",
    "check_setting_specs",
    "shown",
]

MAX_HOOK_ENTRIES = 500
"""Entries one hook of one plugin may return (modes, tools, readers, models, commands):
far more than any plugin needs, and read no further, so a plugin that returns an endless
iterator or a list of a million is left out instead of holding up the start."""

MAX_ID_CHARS = 200
"""The longest id a hook may register (an index type's dotted path, a tool, LLM,
embedding or command name, a file extension); mode ids have their own rule."""

COMPONENTS = ("number", "text", "checkbox", "dropdown", "radio")
"""The ``component`` values the settings forms can draw."""

MAX_SETTINGS = 100
"""Settings one ``get_user_settings()`` or ``get_admin_settings()`` may declare: a form
of more is a plugin's bug, and each one is a UI element of every page."""

MAX_CHOICES = 500
"""Choices one dropdown or radio setting may offer."""

MAX_SETTING_ID_CHARS = 64
"""The longest setting id (it names UI elements)."""

MODE_ID_PATTERN = r"[a-z0-9][a-z0-9_-]*"
"""What a mode id must match: it is typed (``--mode``), sent (``"mode"`` in the API) and
part of UI element ids, so ``FullQA`` or `` fullqa`` beside ``fullqa`` would be a second
mode that reads as the first."""

MAX_MODE_ID_CHARS = 40
"""The longest mode id."""

MAX_MODE_NAME_CHARS = 80
"""The longest mode name (the selector's label)."""

MAX_MODE_DESCRIPTION_CHARS = 1_000
"""The longest mode description (shown under the selector)."""


class RuleError(ValueError):
    """What a plugin returned breaks a rule; the message says whose value and which rule."""


def _fail(owner: str, message: str) -> NoReturn:
    raise RuleError(f"{owner}: {message}")


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut at ``limit`` characters (a plugin's id
    may be a megabyte long)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _choice_values(choices: Sequence[Any]) -> list[Any]:
    return [c[1] if isinstance(c, tuple | list) and len(c) == 2 else c for c in choices]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_number(owner: str, spec: Mapping[str, Any], value: Any) -> None:
    if not _is_number(value):
        _fail(owner, f"a number's value must be a number, got {value!r}")
    low, high = spec.get("minimum"), spec.get("maximum")
    for bound, given in (("minimum", low), ("maximum", high)):
        if given is not None and not _is_number(given):
            _fail(owner, f"'{bound}' must be a number, got {given!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(owner, f"the default {value!r} is outside [{low}, {high}]")


def _check_choices(owner: str, kind: str, spec: Mapping[str, Any], value: Any) -> None:
    choices = spec.get("choices")
    if not isinstance(choices, list | tuple) or not choices:
        _fail(owner, f"a {kind} needs a non-empty list of 'choices'")
    if len(choices) > MAX_CHOICES:
        _fail(owner, f"{len(choices)} choices; at most {MAX_CHOICES} (MAX_CHOICES)")
    allowed = _choice_values(choices)
    picked = value if spec.get("multiselect") else [value]
    if not isinstance(picked, list) or any(v not in allowed for v in picked):
        _fail(owner, f"the default {value!r} is not among the choices {allowed}"[:300])


def _check_spec(owner: str, spec: Any) -> None:
    if not isinstance(spec, Mapping):
        _fail(owner, f"must be a dict, got {type(spec).__name__}")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        _fail(owner, "needs a 'name' (its label)")
    if "value" not in spec:
        _fail(owner, "needs a 'value' (its default)")
    kind, value = spec.get("component"), spec["value"]
    if kind not in COMPONENTS:
        _fail(owner, f"'component' must be one of {', '.join(COMPONENTS)}, got {kind!r}")
    if "info" in spec and not isinstance(spec["info"], str | None):
        _fail(owner, "'info' must be text")
    if kind == "number":
        _check_number(owner, spec, value)
    elif kind == "checkbox" and not isinstance(value, bool):
        _fail(owner, f"a checkbox's value must be True or False, got {value!r}")
    elif kind == "text" and not isinstance(value, str):
        _fail(owner, f"a text's value must be a string, got {value!r}")
    elif kind in ("dropdown", "radio"):
        _check_choices(owner, kind, spec, value)


def check_setting_specs(specs: Any, owner: str = "settings") -> None:
    """Check settings as ``get_user_settings()`` / ``get_admin_settings()`` return them:
    a dict of at most :data:`MAX_SETTINGS` identifiers to specs the settings forms can
    draw. Raises :class:`RuleError` naming ``owner`` and the setting."""
    if not isinstance(specs, Mapping):
        _fail(owner, f"must return a dict of setting id to spec, got {type(specs).__name__}")
    if len(specs) > MAX_SETTINGS:
        _fail(owner, f"declares {len(specs)} settings; at most {MAX_SETTINGS} (MAX_SETTINGS)")
    for key, spec in specs.items():
        if not isinstance(key, str) or not key.isidentifier() or len(key) > MAX_SETTING_ID_CHARS:
            _fail(
                owner,
                f"setting id {shown(key)} must be an identifier of at most {MAX_SETTING_ID_CHARS} "
                "characters (it names UI elements)",
            )
        _check_spec(f"{owner}[{shown(key)}]", spec)


def check_reasoning_info(info: Any, owner: str) -> None:
    """Check what a mode's ``get_info()`` returned: a ``ReasoningInfo`` whose id matches
    :data:`MODE_ID_PATTERN` in at most :data:`MAX_MODE_ID_CHARS` characters, with a name
    and a description (text, bounded). Raises :class:`RuleError` naming ``owner``."""
    from ragloom_app.reasoning.base import ReasoningInfo

    if not isinstance(info, ReasoningInfo):
        _fail(owner, f"get_info() must return a ReasoningInfo, got {type(info).__name__}")
    mode_id = info.id
    if (
        not isinstance(mode_id, str)
        or len(mode_id) > MAX_MODE_ID_CHARS
        or not re.fullmatch(MODE_ID_PATTERN, mode_id)
    ):
        _fail(
            owner,
            f"the id {shown(mode_id)} must be 1 to {MAX_MODE_ID_CHARS} lower-case letters, "
            "digits, '-' or '_', starting with a letter or digit",
        )
    bounds = (("name", MAX_MODE_NAME_CHARS), ("description", MAX_MODE_DESCRIPTION_CHARS))
    for field, limit in bounds:
        text = getattr(info, field)
        if not isinstance(text, str) or not text.strip() or len(text) > limit:
            _fail(owner, f"get_info() needs a {field}: text of 1 to {limit} characters")
