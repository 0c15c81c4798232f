"""Plugins installed with pip: the example plugin works everywhere, a broken one is listed.

A throwaway virtual environment (tests/helpers/plugin_venv.py) sees the project's .venv
but installs into its own, so the shared .venv never holds the plugins.
pip installs examples/ragloom-plugin-example and a plugin that fails to import
(tests/e2e/plugins/ragloom-broken-plugin) from copies of their folders, offline; Ragloom's
code and flowsettings.py stay as they are. The tests run in order: install, use through
the CLI (and the UI), uninstall.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.plugin_venv import make_plugin_venv
from tests.helpers.ports import free_port

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "ragloom-plugin-example"
BROKEN = Path(__file__).resolve().parent / "plugins" / "ragloom-broken-plugin"
SAMPLE = EXAMPLE / "tests" / "sample.rst"
QUESTION = "At what temperature does the Zorblax reactor run?"


@dataclass
class PluginEnv:
    """The throwaway environment: its python, a data folder, how long pip took."""

    python: Path
    root: Path
    data_dir: Path
    install_seconds: float

    def run(self, *args: str, settings: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``python -m <args>`` in the environment, with Ragloom's settings and data."""
        env = {
            **os.environ,
            "RAGLOOM_SETTINGS": str(settings or PROJECT / "flowsettings.py"),
            "RAGLOOM_DATA_DIR": str(self.data_dir),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PYTHONPATH": str(PROJECT),  # for tests.helpers (the scripted LLM)
        }
        return subprocess.run(
            [str(self.python), "-m", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=self.root,
        )

    def ragloom(self, *args: str, settings: Path | None = None) -> subprocess.CompletedProcess[str]:
        """The ``ragloom`` command of the environment."""
        return self.run("ragloom_app.cli", *args, settings=settings)

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        """pip of the environment, offline; fails the test if pip does."""
        run = self.run("pip", *args)
        assert run.returncode == 0, run.stdout + run.stderr
        return run


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginEnv]:
    root = tmp_path_factory.mktemp("plugin-env")
    python = make_plugin_venv(root / "venv") / "python"
    env = PluginEnv(python, root, root / "data", 0.0)
    started = time.perf_counter()
    for source in (EXAMPLE, BROKEN):
        # A copy: pip builds in the source folder and would leave build/ in the project.
        copy = shutil.copytree(source, root / source.name, ignore=shutil.ignore_patterns("build"))
        env.pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(copy))
    env.install_seconds = time.perf_counter() - started
    print(f"pip installed both plugins in {env.install_seconds:.1f} s")
    yield env


def test_pip_installed_plugins_are_listed_with_versions_and_errors(plugin_env: PluginEnv) -> None:
    run = plugin_env.ragloom("plugins", "--json")
    assert run.returncode == 0, run.stderr
    broken, example = json.loads(run.stdout)
    assert example["name"] == "ragloom-plugin-example" and example["version"] == "0.1.0"
    assert example["entry_point"] == "example = ragloom_plugin_example"
    assert example["error"] is None
    assert example["registered"]["reasonings"] == ["verified"]
    assert example["registered"]["tools"] == ["date_calc"]
    assert example["registered"]["readers"] == [".rst", ".rest"]
    assert broken["name"] == "ragloom-broken-plugin" and broken["version"] == "0.1.0"
    assert broken["error"].startswith("ImportError: cannot import name")
    assert "failed to load" in run.stderr  # and it is in the log


def test_the_app_runs_despite_the_broken_plugin(plugin_env: PluginEnv) -> None:
    run = plugin_env.ragloom("modes")
    assert run.returncode == 0, run.stderr
    assert [line.split()[0] for line in run.stdout.splitlines()][-1] == "verified"
    text = plugin_env.ragloom("plugins").stdout
    assert "ragloom-plugin-example 0.1.0\n  reasonings: verified\n  tools: date_calc\n" in text
    assert "ragloom-broken-plugin 0.1.0\n  error: ImportError" in text


@pytest.fixture(scope="module")
def indexed_sample(plugin_env: PluginEnv) -> subprocess.CompletedProcess[str]:
    """``ragloom index add sample.rst --json``, run once for the tests that need it."""
    return plugin_env.ragloom("index", "add", str(SAMPLE), "--json")


def test_the_plugin_reader_indexes_rst_files(
    indexed_sample: subprocess.CompletedProcess[str],
) -> None:
    assert indexed_sample.returncode == 0, indexed_sample.stderr
    (outcome,) = json.loads(indexed_sample.stdout)["files"]
    assert outcome["file"] == "sample.rst" and outcome["status"] == "indexed"


@pytest.mark.llm
@pytest.mark.usefixtures("indexed_sample")
def test_the_plugin_mode_answers_through_ask(plugin_env: PluginEnv) -> None:
    run = plugin_env.ragloom("ask", QUESTION, "--mode", "verified", "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["mode"] == "verified"
    assert "451" in record["answer"], record
    assert any(c["source"] == "sample.rst" for c in record["citations"])
    verify = next(s for s in record["steps"] if s["step"] == "verify" and "output" in s)
    assert verify["output"]["sentences"], verify


def test_react_uses_the_plugin_tool(plugin_env: PluginEnv, tmp_path: Path) -> None:
    # A scripted LLM makes the agent's choice of tool certain; the rest is the real thing.
    replies = [
        " days between dates",
        ' Count them.\nAction: date_calc\nAction Input: {"start": "2024-01-01", '
        '"end": "2024-03-01"}',
        " I know it.\nFinal Answer: There are 60 days.",
    ]
    settings = tmp_path / "scripted_settings.py"
    settings.write_text(
        f"DATA_DIR = {str(tmp_path / 'data')!r}\n"
        'LLMS = {"scripted": {"class": "tests.helpers.scripted_llm.ScriptedLLM", '
        f'"replies": {replies!r}}}}}\n'
        'DEFAULT_LLM = "scripted"\n'
        'EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}\n'
        'DEFAULT_EMBEDDING = "hash"\n'
    )
    env = PluginEnv(plugin_env.python, plugin_env.root, tmp_path / "data", 0)
    question = "How many days are there from 2024-01-01 to 2024-03-01?"
    run = env.ragloom("ask", question, "--mode", "react", "--json", settings=settings)
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["answer"] == "There are 60 days."
    outputs = [json.dumps(s.get("output")) for s in record["steps"] if "date_calc" in s["step"]]
    assert any("60 days from 2024-01-01 to 2024-03-01" in o for o in outputs), record["steps"]


@pytest.fixture
def served(plugin_env: PluginEnv) -> Iterator[str]:
    """``ragloom serve`` of the environment on a free port; its URL."""
    port = free_port()
    env = {
        **os.environ,
        "RAGLOOM_SETTINGS": str(PROJECT / "flowsettings.py"),
        "RAGLOOM_DATA_DIR": str(plugin_env.data_dir),
    }
    command = [str(plugin_env.python), "-m", "ragloom_app.cli", "serve", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--no-first-run-docs"],
        env=env,
        cwd=plugin_env.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    stderr = server.stderr.read() if server.stderr else ""
                    raise AssertionError(f"the server did not start: {stderr}") from None
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.browser
def test_the_ui_shows_the_plugin_mode_list_and_reader(served: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with urllib.request.urlopen(f"{served}gradio_api/info", timeout=30) as response:
        api = json.load(response)
    # The HTTP API's "ask" endpoint takes the plugin's mode as a value of its mode input.
    assert '"verified"' in json.dumps(api["named_endpoints"]["/ask"])

    page.goto(served)
    page.locator("#mode-selector input[role=combobox]").click()
    expect(page.get_by_role("option", name="Verified answer", exact=True)).to_be_visible(
        timeout=20_000
    )
    page.get_by_role("option", name="Verified answer", exact=True).click()
    page.get_by_text("Search settings").click()  # the mode's own settings, from the plugin
    expect(page.locator("#setting-verified-min_support input[type=number]")).to_be_visible()

    page.get_by_role("tab", name="Plugins").click()
    plugins = page.locator("#plugin-list")
    example = plugins.locator("tr", has_text="ragloom-plugin-example")
    expect(example).to_contain_text("0.1.0")
    expect(example).to_contain_text("reasonings: verified")
    expect(example).to_contain_text("tools: date_calc")
    expect(example).to_contain_text("loaded")
    broken = plugins.locator("tr", has_text="ragloom-broken-plugin")
    expect(broken).to_contain_text("failed")
    expect(broken).to_contain_text("ImportError: cannot import name")

    page.get_by_role("tab", name="Files").click()
    upload = tmp_path / "manual.rst"
    upload.write_text("Pump manual\n===========\n\nThe spare pumps are kept in **hall C**.\n")
    page.locator("#upload input[type=file]").set_input_files(str(upload))
    expect(
        page.locator("#upload").get_by_role("cell", name="manual.rst", exact=True)
    ).to_be_visible(timeout=20_000)
    page.locator("#index-button").click()
    expect(page.locator("#index-results")).to_contain_text("1 indexed", timeout=180_000)


def test_uninstalling_removes_what_the_plugins_added(plugin_env: PluginEnv) -> None:
    plugin_env.pip("uninstall", "-y", "ragloom-plugin-example", "ragloom-broken-plugin")
    run = plugin_env.ragloom("plugins", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
    ask = plugin_env.ragloom("ask", QUESTION, "--mode", "verified")
    assert ask.returncode == 2 and "unknown mode 'verified'" in ask.stderr
    add = plugin_env.ragloom("index", "add", str(SAMPLE), "--reindex", "--json")
    (outcome,) = json.loads(add.stdout)["files"]
    assert outcome["status"] == "failed" and "unsupported file type '.rst'" in outcome["reason"]
