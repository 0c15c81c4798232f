"""Ragloom's plugin hooks: a pip package adds reasoning modes, index types, tools, readers.

A plugin author writes ``from ragloom_app.plugins import hookimpl`` and implements the
hooks of :mod:`ragloom_app.plugins.hookspecs`; docs/plugins.md has the tutorial.
"""

import re

import pluggy

__all__ = ["hookimpl", "normalize_name"]

hookimpl = pluggy.HookimplMarker("ragloom")
"""Marks a plugin's function as the implementation of the Ragloom hook of its name."""


def normalize_name(name: str) -> str:
    """A plugin or distribution name compared loosely (PEP 503): ``Foo_Bar`` → ``foo-bar``."""
    return re.sub(r"[-_.]+", "-", name).lower().strip()
