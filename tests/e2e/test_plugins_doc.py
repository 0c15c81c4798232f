"""docs/plugins.md, run as a reader follows it: every code block, in order.

A block whose first line is ``# some/path.ext`` is a file: it is written under the
tutorial's folder. A ``sh`` block runs in bash there (a ``cd`` in it carries over), in a
throwaway environment whose ``pip`` and ``ragloom`` are the reader's. Any other block
fails the test, so the guide cannot gain code that nothing runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom_app.settings import AppSettings
from ragloom_app.testing import check_plugin, check_reader, check_tool
from tests.helpers.plugin_venv import make_plugin_venv

PROJECT = Path(__file__).resolve().parents[2]
GUIDE = PROJECT / "docs" / "plugins.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_FILE = re.compile(r"# ([\w./-]+\.\w+)")


def _blocks() -> list[tuple[str, str]]:
    return _BLOCK.findall(GUIDE.read_text(encoding="utf-8"))


def test_every_code_block_of_the_plugin_guide_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = make_plugin_venv(tmp_path / "venv")
    where = tmp_path / "cwd.txt"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "RAGLOOM_SETTINGS": str(PROJECT / "flowsettings.py"),
        "RAGLOOM_DATA_DIR": str(tmp_path / "data"),
        # Offline: pip builds with the setuptools it has and never asks an index.
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    cwd = tmp_path / "start"
    cwd.mkdir()
    outputs: list[str] = []
    files: dict[str, Path] = {}
    for language, code in _blocks():
        header = _FILE.fullmatch(code.splitlines()[0])
        if header and language in ("python", "toml"):
            target = cwd / header.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(code, encoding="utf-8")
            files[header.group(1)] = target
        elif language == "sh":
            script = f'{code}\npwd > "{where}"\n'
            run = subprocess.run(
                ["bash", "-e", "-c", script],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert run.returncode == 0, f"{code}\n{run.stdout}\n{run.stderr}"
            outputs.append(run.stdout)
            cwd = Path(where.read_text().strip())
        else:
            pytest.fail(f"docs/plugins.md has a {language} block that no test runs: {code[:60]}")

    assert list(files) == [
        "pyproject.toml",
        "ragloom_plugin_quote/__init__.py",
        "tests/test_quote.py",
        "flowsettings.py",
        "ragloom_plugin_temperature.py",
        "ragloom_plugin_more/__init__.py",
    ]
    _made, installed, used, tested, disabled = outputs
    assert cwd.name == "ragloom-plugin-quote"
    assert "ragloom-plugin-quote 0.1.0\n  reasonings: quote\n" in installed
    assert "\nquote " in installed  # in `ragloom modes`
    assert '"The Zorblax reactor runs at 451 kelvin." [1]' in used
    assert "[1] reactor.md: The Zorblax reactor runs at 451 kelvin." in used
    assert "2 passed" in tested
    assert disabled.strip() == "ragloom-plugin-quote 0.1.0 (disabled)"

    # The DISABLED_PLUGINS block is a settings file that does what the guide says.
    settings = files["flowsettings.py"]
    assert AppSettings.load(settings).disabled_plugins == ["ragloom-plugin-quote"]
    listing = subprocess.run(
        ["ragloom", "plugins"],
        cwd=cwd,
        env={**env, "RAGLOOM_SETTINGS": str(settings)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert listing.stdout.strip() == "ragloom-plugin-quote 0.1.0 (disabled)", listing.stderr

    # The last module holds a tool, a reader and an LLM; they meet the contracts.
    monkeypatch.syspath_prepend(str(cwd))
    import ragloom_plugin_more as more

    loaded = check_plugin(more)
    assert loaded.info.registered["tools"] == ["word_count"]
    assert loaded.info.registered["readers"] == [".log"]
    assert loaded.info.registered["llms"] == ["ollama"]
    check_tool(more.WordCountTool, "three small words", expect="3 words", bad_input=" ")
    log = tmp_path / "pump.log"
    log.write_text("2024-05-01 10:00:02 pump 3 started\n2024-05-01 10:07:13 pump 3 stopped\n")
    (page,) = check_reader(more.LogReader(), log)
    assert page.text == "pump 3 started\npump 3 stopped"
    monkeypatch.delitem(sys.modules, "ragloom_plugin_more")

    # The tool that checks its input: a number passes, text that is no number is refused
    # with its reason, and it meets the tool contract.
    import ragloom_plugin_temperature as temperature

    tool = temperature.TemperatureTool
    assert tool.check_input("451") is None
    assert tool.check_input("[1] (reactor.md) The reactor") == (
        "'[1] (reactor.md) The reactor' is not a number of kelvin"
    )
    check_tool(tool, "451", expect="177.85")
    monkeypatch.delitem(sys.modules, "ragloom_plugin_temperature")
