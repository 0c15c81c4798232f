"""Import what the settings name by dotted path, and keep the registered classes."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

from ragloom_app.settings import SettingsError

__all__ = ["build_from_spec", "import_object", "import_subclass"]

T = TypeVar("T")


def import_object(setting: str, dotted_path: str) -> Any:
    """Import ``package.module.Name``; a failure names the setting and the path."""
    module_name, _, attr = str(dotted_path).rpartition(".")
    if not module_name:
        raise SettingsError(f"{setting}: {dotted_path!r} is not a dotted path (module.Name)")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SettingsError(
            f"{setting}: cannot import {dotted_path!r}: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SettingsError(
            f"{setting}: cannot import {dotted_path!r}: module {module_name!r} has no {attr!r}"
        ) from None


def import_subclass(setting: str, dotted_path: str, base: type[T]) -> type[T]:
    """Import a class and check that it subclasses ``base``."""
    obj = import_object(setting, dotted_path)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise SettingsError(f"{setting}: {dotted_path!r} is not a subclass of {base.__name__}")
    return obj


def build_from_spec(setting: str, spec: Mapping[str, Any]) -> Any:
    """Build an object from ``{"class": "dotted.Path", **keyword_arguments}``.

    ``class`` may also be the class itself (plugins give classes, settings give paths).
    """
    if "class" not in spec:
        raise SettingsError(f"{setting}: a spec needs a 'class' key, got {dict(spec)!r}")
    kwargs = {k: v for k, v in spec.items() if k != "class"}
    target = spec["class"]
    factory = target if callable(target) else import_object(f"{setting}.class", target)
    shown = getattr(target, "__qualname__", target)
    try:
        return factory(**kwargs)
    except Exception as exc:
        raise SettingsError(f"{setting}: cannot build {shown}: {exc}") from exc
