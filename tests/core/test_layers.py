"""The core library never imports the app, gradio or sqlmodel (docs/architecture.md).

Checked in a fresh interpreter, so modules that other tests imported cannot hide an import:
every ``ragloom.*`` module is imported there and ``sys.modules`` is read afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# The app and the web stack the core must stay free of; a name counts with its submodules.
FORBIDDEN = ("ragloom_app", "gradio", "sqlmodel", "fastapi", "uvicorn", "starlette")

_PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    import ragloom

    imported = []
    for module in pkgutil.walk_packages(ragloom.__path__, "ragloom."):
        importlib.import_module(module.name)
        imported.append(module.name)
    print(json.dumps({"imported": imported, "loaded": sorted(sys.modules)}))
    """
)


def _import_every_core_module() -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    probe: dict[str, list[str]] = json.loads(result.stdout.splitlines()[-1])
    return probe


def test_the_core_imports_no_app_and_no_web_stack() -> None:
    probe = _import_every_core_module()
    # The walk reached the core's subpackages, not only the top-level package.
    assert {"ragloom.stores.bm25.store", "ragloom.agents.rewoo.planner"} <= set(probe["imported"])
    leaked = [
        name
        for name in probe["loaded"]
        if any(name == top or name.startswith(top + ".") for top in FORBIDDEN)
    ]
    assert leaked == [], f"the core imported {leaked}"
