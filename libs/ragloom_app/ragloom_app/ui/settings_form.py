"""Forms built from self-describing setting specs (reasoning user settings, index settings).

A spec is a dict: ``name`` (label), ``value`` (default), ``component`` (``number``,
``text``, ``checkbox``, ``dropdown`` or ``radio``), optional ``choices`` (values or
``(label, value)`` pairs), ``multiselect``, ``info``, ``minimum``, ``maximum``, ``step``.
A :class:`SettingsForm` holds one group of components per owner (a reasoning mode, an
index type, an index); only the selected owner's group shows (or, for the indices'
runtime settings, every group, each under its owner's name), and the handlers get the
values of every component and keep the selected owner's.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

__all__ = ["SettingsForm", "build_settings_form", "coerce_value", "setting_component"]


def _slug(owner: str, dotted: bool = True) -> str:
    """``fullqa`` → ``fullqa``; ``ragloom_app.index.file.FileIndex`` → ``fileindex`` (a
    ``dotted`` path: its last part); ``My files`` → ``my-files``."""
    name = owner.rsplit(".", 1)[-1] if dotted else owner
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


def setting_component(
    spec: Mapping[str, Any], elem_id: str, key: str | None = None
) -> gr.components.Component:
    """The gradio input for one spec (an unknown ``component`` becomes a text box);
    ``key`` keeps the user's value when a ``gr.render`` draws the form again. Always
    interactive: gradio would disable one drawn by a render that is no event's input."""
    kind = spec.get("component", "text")
    common: dict[str, Any] = {
        "label": spec.get("name", elem_id),
        "value": spec.get("value"),
        "info": spec.get("info"),
        "elem_id": elem_id,
        "key": key,
        "interactive": True,
    }
    if kind == "number":
        is_int = isinstance(spec.get("value"), int) and not isinstance(spec.get("step"), float)
        return gr.Number(
            minimum=spec.get("minimum"),
            maximum=spec.get("maximum"),
            step=spec.get("step", 1),
            precision=0 if is_int else None,
            **common,
        )
    if kind == "checkbox":
        return gr.Checkbox(**common)
    if kind == "radio":
        return gr.Radio(choices=list(spec.get("choices") or []), **common)
    if kind == "dropdown":
        return gr.Dropdown(
            choices=list(spec.get("choices") or []),
            multiselect=bool(spec.get("multiselect")),
            filterable=False,
            **common,
        )
    return gr.Textbox(**common)


def coerce_value(spec: Mapping[str, Any], value: Any) -> Any:
    """A form value typed as the spec's default is (gradio numbers arrive as floats).

    A number that is not finite stays as it came: gradio lets NaN and infinity through,
    and the server's typed check (:func:`~ragloom_app.index.settings.typed_setting_value`)
    refuses them in words, where ``int()`` would raise.
    """
    default = spec.get("value")
    if value is None:
        return default
    if isinstance(default, bool):
        return bool(value)
    if isinstance(value, float) and not math.isfinite(value):
        return value
    if isinstance(default, int) and isinstance(value, int | float):
        return int(value)
    if isinstance(default, float) and isinstance(value, int | float):
        return float(value)
    return value


@dataclass
class SettingsForm:
    """The components of a form, one group per owner, in a stable order."""

    specs: dict[str, dict[str, dict[str, Any]]]
    groups: dict[str, gr.Group] = field(default_factory=dict)
    keys: list[tuple[str, str]] = field(default_factory=list)
    components: list[gr.components.Component] = field(default_factory=list)

    def values_for(self, owner: str | None, values: Sequence[Any]) -> dict[str, Any]:
        """The settings of ``owner`` from the values of :attr:`components`, typed."""
        picked: dict[str, Any] = {}
        for (key_owner, key), value in zip(self.keys, values, strict=True):
            if key_owner == owner:
                picked[key] = coerce_value(self.specs[key_owner][key], value)
        return picked

    def show(self, owner: str | None) -> list[Any]:
        """Visibility updates for every group: only ``owner``'s shows."""
        return [gr.update(visible=name == owner) for name in self.groups]


def build_settings_form(
    specs: Mapping[str, Mapping[str, Mapping[str, Any]]],
    selected: str | None,
    prefix: str,
    *,
    every_owner: bool = False,
) -> SettingsForm:
    """Lay out one group of components per owner; ``selected``'s group is the visible one,
    or, with ``every_owner``, every group, each titled with its owner's name.

    Element ids are ``{prefix}-{owner}-{key}`` (the owner's last dotted part, lower case,
    other characters as ``-``), e.g. ``setting-fullqa-top_k``, ``index-setting-my-files-mmr``.
    """
    form = SettingsForm(specs={o: {k: dict(v) for k, v in s.items()} for o, s in specs.items()})
    for owner, owner_specs in form.specs.items():
        with gr.Group(visible=every_owner or owner == selected) as group:
            if every_owner:
                gr.HTML(f'<div class="rl-setting-owner">{html.escape(owner)}</div>')
            for key, spec in owner_specs.items():
                elem_id = f"{prefix}-{_slug(owner, dotted=not every_owner)}-{key}"
                keep = f"{prefix}:{owner}:{key}" if every_owner else None
                form.components.append(setting_component(spec, elem_id, keep))
                form.keys.append((owner, key))
        form.groups[owner] = group
    return form
