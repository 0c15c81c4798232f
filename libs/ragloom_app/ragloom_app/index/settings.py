"""An index's runtime settings: what one request may set for one index, checked.

An index type declares them in :meth:`~ragloom_app.index.base.BaseIndex.get_user_settings`
(the same self-describing specs as a reasoning mode's, :data:`SettingSpec`). A request
addresses them by index name, ``index_settings={"My files": {"retrieval_mode": "vector"}}``
(``ragloom ask --index-setting "My files:retrieval_mode=vector"`` on the command line);
:func:`typed_setting_value` refuses a value its spec does not allow, in words that name
the setting and the bound.

Besides its own settings, an index's retrievers get what the request decides:
:data:`REQUEST_KEYS`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragloom_app.errors import UserFacingError
from ragloom_app.reasoning.base import SettingSpec

if TYPE_CHECKING:
    from ragloom_app.index.base import BaseIndex

__all__ = [
    "MAX_TEXT_SETTING_CHARS",
    "REQUEST_KEYS",
    "IndexSettingsError",
    "check_index_names",
    "choice_values",
    "index_request_values",
    "index_settings_from_options",
    "moved_mode_settings",
    "parse_index_setting",
    "resolve_values",
    "typed_setting_value",
]

logger = logging.getLogger(__name__)

REQUEST_KEYS = ("llm", "top_k")
"""Keys of ``get_retriever_pipelines(settings)`` the request fills in, not the user:
``llm``, the request's model (for reranking), and ``top_k``, the mode's count of passages
(the retrievers' default when a search does not say)."""

MAX_TEXT_SETTING_CHARS = 1_000
"""The longest value of a ``text`` setting a request may give."""

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class IndexSettingsError(UserFacingError, ValueError):
    """A request's setting for an index that the index does not have or does not allow."""


def choice_values(spec: Mapping[str, Any]) -> list[Any]:
    """The values of a spec's ``choices`` (given as values or ``(label, value)`` pairs)."""
    return [
        c[1] if isinstance(c, tuple | list) and len(c) == 2 else c for c in spec.get("choices", [])
    ]


def _shown(value: Any) -> str:
    """``value`` for an error message: a number of hundreds of digits, abbreviated."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _number(key: str, spec: SettingSpec, value: Any) -> int | float:
    whole = isinstance(spec.get("value"), int) and not isinstance(spec.get("step"), float)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise IndexSettingsError(f"{key} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IndexSettingsError(f"{key} must be a number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int of hundreds of digits: no float holds it
        finite = False
    if not finite:
        raise IndexSettingsError(f"{key} must be a number, got {_shown(value)}")
    if whole and value != int(value):
        raise IndexSettingsError(f"{key} must be a whole number, got {value!r}")
    low, high = spec.get("minimum"), spec.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        raise IndexSettingsError(f"{key} must be between {low} and {high}, got {value!r}")
    return int(value) if whole else float(value)


def _flag(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    raise IndexSettingsError(f"{key} must be true or false, got {value!r}")


def typed_setting_value(key: str, spec: SettingSpec, value: Any) -> Any:
    """``value`` for the setting ``key``, typed as its spec says; raises
    :class:`IndexSettingsError` for a value the spec does not allow.

    Numbers must be within ``minimum`` and ``maximum`` (whole when the default is);
    checkboxes take booleans (or ``true``/``false``, ``yes``/``no``, ``on``/``off``,
    ``1``/``0`` as text); dropdowns and radios one of their ``choices`` (a list of them
    when ``multiselect``); text at most :data:`MAX_TEXT_SETTING_CHARS` characters.
    """
    kind = spec.get("component", "text")
    if kind == "number":
        return _number(key, spec, value)
    if kind == "checkbox":
        return _flag(key, value)
    if kind in ("dropdown", "radio"):
        allowed = choice_values(spec)
        picked = value if spec.get("multiselect") and isinstance(value, list) else [value]
        wrong = [v for v in picked if v not in allowed]
        if wrong or (spec.get("multiselect") and not isinstance(value, list)):
            shown = ", ".join(str(v) for v in allowed)
            raise IndexSettingsError(f"{key} must be one of {shown}, got {value!r}")
        return list(value) if spec.get("multiselect") else value
    if not isinstance(value, str):
        raise IndexSettingsError(f"{key} must be text, got {value!r}")
    if len(value) > MAX_TEXT_SETTING_CHARS:
        raise IndexSettingsError(
            f"{key} is {len(value):,} characters long; the limit is {MAX_TEXT_SETTING_CHARS:,}"
        )
    return value


def resolve_values(specs: Mapping[str, SettingSpec], given: Mapping[str, Any]) -> dict[str, Any]:
    """The defaults of ``specs`` with the ``given`` values on top, each checked and typed.

    A key the specs do not declare is refused (a typo never passes silently).
    """
    unknown = sorted(set(given) - set(specs))
    if unknown:
        known = ", ".join(specs) or "none"
        raise IndexSettingsError(
            f"no such setting: {', '.join(unknown)} (this index's settings: {known})"
        )
    values = {key: spec.get("value") for key, spec in specs.items()}
    for key, value in given.items():
        values[key] = typed_setting_value(key, specs[key], value)
    return values


def parse_index_setting(text: str) -> tuple[str, str, str]:
    """``"My files:top_k=3"`` → ``("My files", "top_k", "3")``: the index, the key, the
    value as text (typed later, by the index's spec). The index name may hold ``:``; the
    last ``:`` before the ``=`` ends it."""
    head, equals, value = text.partition("=")
    index, colon, key = head.rpartition(":")
    if not equals or not colon or not index.strip() or not key.strip():
        raise IndexSettingsError(
            f"an index setting is INDEX:KEY=VALUE (e.g. 'My files:retrieval_mode=vector'), "
            f"got {text!r}"
        )
    return index.strip(), key.strip(), value.strip()


def index_settings_from_options(options: Sequence[str]) -> dict[str, dict[str, str]]:
    """``index_settings`` from ``INDEX:KEY=VALUE`` options (``ragloom ask --index-setting``);
    the values stay text until the index's specs type them."""
    settings: dict[str, dict[str, str]] = {}
    for option in options:
        index, key, value = parse_index_setting(option)
        settings.setdefault(index, {})[key] = value
    return settings


def check_index_names(given: Mapping[str, Any], names: list[str]) -> None:
    """Refuse settings addressed to an index that does not exist (a typo, or one deleted)."""
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise IndexSettingsError(
            f"settings for no such index: {', '.join(map(repr, unknown))} "
            f"(indices: {', '.join(map(repr, names)) or 'none'})"
        )


def moved_mode_settings(
    mode_specs: Mapping[str, SettingSpec], mode_settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The values of ``mode_settings`` the mode does not declare: candidates for keys that
    moved from the mode to the indices (``retrieval_mode``, ``mmr``, ``mmr_lambda``,
    ``rerank`` were FullQA's until issue 15). :func:`index_request_values` honours them,
    for one transition, with a warning in the log."""
    return {k: v for k, v in (mode_settings or {}).items() if k not in mode_specs}


def index_request_values(
    index_type: type[BaseIndex],
    name: str,
    own: Mapping[str, Any] | None,
    moved: Mapping[str, Any],
) -> dict[str, Any]:
    """The settings of the index ``name`` (of ``index_type``) for one request, resolved by
    its type: its ``own`` values over the ``moved`` mode-level values it declares.

    Raises :class:`IndexSettingsError` naming the index for a value it does not allow.
    """
    specs = index_type.get_user_settings()
    legacy = {k: v for k, v in moved.items() if k in specs}
    if legacy:
        logger.warning(
            "the mode settings %s belong to the indices now; used for the index %r for now: "
            "give them as index_settings={index name: {key: value}} "
            "(ragloom ask --index-setting 'INDEX:KEY=VALUE')",
            ", ".join(sorted(legacy)),
            name,
        )
    try:
        return index_type.resolve_settings({**legacy, **(own or {})})
    except IndexSettingsError as exc:
        raise IndexSettingsError(f"index {name!r}: {exc}") from None
