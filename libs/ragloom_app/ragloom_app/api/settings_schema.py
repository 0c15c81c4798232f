"""A mode's (or an index's) user settings as a JSON Schema object, for the API's clients.

The settings are the specs a reasoning class's ``get_user_settings`` returns (kotaemon's
shape: ``name``, ``value``, ``component``, ``choices``, ``minimum``/``maximum``, ``info``);
the schema says the same in the vocabulary every client library reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom_app.index.settings import MAX_TEXT_SETTING_CHARS, choice_values

__all__ = ["settings_json_schema"]


def _property(spec: Mapping[str, Any], llm_names: Sequence[str]) -> dict[str, Any]:
    kind = spec.get("component", "text")
    prop: dict[str, Any] = {"title": str(spec.get("name", "")), "default": spec.get("value")}
    if spec.get("info"):
        prop["description"] = str(spec["info"])
    if spec.get("choices_from"):
        prop.update(type="string", enum=["", *llm_names])
    elif kind == "number":
        whole = isinstance(spec.get("value"), int) and not isinstance(spec.get("step"), float)
        prop["type"] = "integer" if whole else "number"
        for bound in ("minimum", "maximum"):
            if spec.get(bound) is not None:
                prop[bound] = spec[bound]
    elif kind == "checkbox":
        prop["type"] = "boolean"
    elif kind in ("dropdown", "radio"):
        allowed = choice_values(spec)
        if spec.get("multiselect"):
            prop.update(type="array", items={"enum": allowed}, uniqueItems=True)
        else:
            prop["enum"] = allowed
    else:
        prop.update(type="string", maxLength=MAX_TEXT_SETTING_CHARS)
    return prop


def settings_json_schema(
    specs: Mapping[str, Mapping[str, Any]], llm_names: Sequence[str] = ()
) -> dict[str, Any]:
    """The JSON Schema of ``specs``: an object of the settings, none required, no others.

    ``llm_names`` are the choices of a setting whose choices are the LLMs (``""``: the
    chat's own)."""
    return {
        "type": "object",
        "properties": {key: _property(spec, llm_names) for key, spec in specs.items()},
        "additionalProperties": False,
    }
