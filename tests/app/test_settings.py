"""AppSettings: a settings file, its defaults and the environment overrides."""

from pathlib import Path

import pytest

from ragloom.llms.openai_compat import OpenAIChat
from ragloom_app.registry import build_from_spec
from ragloom_app.settings import AppSettings, SettingsError

PROJECT = Path(__file__).resolve().parents[2]


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGLOOM_SETTINGS", raising=False)
    monkeypatch.delenv("RAGLOOM_DATA_DIR", raising=False)
    settings = AppSettings.load()
    assert settings.source == "defaults"
    assert settings.default_reasoning == "fullqa"
    assert settings.database == "sqlite:///appdata/ragloom.db"


def test_file_values_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "mysettings.py"
    file.write_text('DATA_DIR = "here"\nDEFAULT_LLM = "local"\nTHEFLOW_THING = 1\n')
    monkeypatch.setenv("RAGLOOM_SETTINGS", str(file))
    monkeypatch.delenv("RAGLOOM_DATA_DIR", raising=False)
    assert AppSettings.load().data_dir == Path("here")
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("RAGLOOM_LLM", "openai")
    settings = AppSettings.load()
    assert settings.data_dir == tmp_path / "elsewhere"
    assert settings.default_llm == "openai"


def test_project_flowsettings_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    project = Path(__file__).resolve().parents[2]
    monkeypatch.delenv("RAGLOOM_SETTINGS", raising=False)
    settings = AppSettings.load(project / "flowsettings.py")
    assert "ragloom_app.reasoning.fullqa.FullQAReasoning" in settings.reasonings
    assert settings.first_run_docs == {"index": "Ragloom docs", "path": str(project / "docs")}


def test_project_openai_llm_works_for_a_local_server_without_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "RAGLOOM_OPENAI_API_KEY", "RAGLOOM_OPENAI_NATIVE_TOOLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGLOOM_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    spec = AppSettings.load(PROJECT / "flowsettings.py").llms["openai"]
    llm = build_from_spec("LLMS['openai']", spec)

    assert isinstance(llm, OpenAIChat)
    assert llm._client().api_key == "not-needed"  # the openai package refuses no key
    assert str(llm._client().base_url) == "http://127.0.0.1:9/v1/"
    assert not llm.supports_tool_calls

    monkeypatch.setenv("RAGLOOM_OPENAI_NATIVE_TOOLS", "1")
    spec = AppSettings.load(PROJECT / "flowsettings.py").llms["openai"]
    assert build_from_spec("LLMS['openai']", spec).supports_tool_calls


def test_missing_or_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not found"):
        AppSettings.load(tmp_path / "nope.py")
    broken = tmp_path / "broken.py"
    broken.write_text("REASONINGS = [\n")
    with pytest.raises(SettingsError, match="error in settings file"):
        AppSettings.load(broken)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("MAX_FILE_BYTES = 0", "MAX_FILE_BYTES: must be a positive whole number, not 0"),
        ("MAX_FILE_BYTES = 2**31", "MAX_FILE_BYTES: at most 2,147,483,647 (what the database"),
        ("QUEUE_MAX_SIZE = '64'", "QUEUE_MAX_SIZE: must be a positive whole number, not '64'"),
        ("MAX_FILES_PER_UPLOAD = True", "MAX_FILES_PER_UPLOAD: must be a positive whole number"),
        ("ALLOWED_HOSTS = 'ragloom.lan'", "ALLOWED_HOSTS: must be a list of host names"),
    ],
)
def test_a_wrong_web_limit_stops_loading_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, message: str
) -> None:
    file = tmp_path / "limits.py"
    file.write_text(line + "\n")
    monkeypatch.delenv("RAGLOOM_SETTINGS", raising=False)
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        AppSettings.load(file)


def test_web_limits_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "limits.py"
    file.write_text("MAX_FILE_BYTES = 1024\nQUEUE_MAX_SIZE = 3\nALLOWED_HOSTS = ['ragloom.lan']\n")
    monkeypatch.delenv("RAGLOOM_SETTINGS", raising=False)
    settings = AppSettings.load(file)
    assert (settings.max_file_bytes, settings.queue_max_size) == (1024, 3)
    assert settings.allowed_hosts == ["ragloom.lan"]
    assert AppSettings().max_files_per_upload == 100  # the defaults hold the rest


def test_indexing_budgets_reach_every_index(tmp_path: Path) -> None:
    from ragloom_app.app import BaseApp

    settings = AppSettings(
        data_dir=tmp_path / "data",
        max_file_chunks=10,
        max_file_seconds=2.5,
        max_upload_bytes=4096,
        max_upload_chunks=20,
    )
    resources = BaseApp(settings).start().indices.indices[0].resources
    assert (
        resources.max_file_chunks,
        resources.max_file_seconds,
        resources.max_upload_bytes,
        resources.max_upload_chunks,
    ) == (10, 2.5, 4096, 20)
    # Left unset, each keeps the index's own default.
    default = BaseApp(AppSettings(data_dir=tmp_path / "other")).start().indices.indices[0].resources
    assert default.max_file_chunks == 50_000 and default.max_upload_chunks == 100_000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("MAX_FILE_CHUNKS = 0", "MAX_FILE_CHUNKS: must be a positive whole number or None"),
        ("MAX_UPLOAD_BYTES = 1.5", "MAX_UPLOAD_BYTES: must be a positive whole number or None"),
        ("MAX_FILE_SECONDS = -1", "MAX_FILE_SECONDS: must be a positive number"),
    ],
)
def test_a_wrong_indexing_budget_stops_startup_naming_it(
    tmp_path: Path, line: str, message: str
) -> None:
    file = tmp_path / "flowsettings.py"
    file.write_text(line + "\n")
    with pytest.raises(SettingsError, match=message):
        AppSettings.load(file)


@pytest.mark.parametrize("value", ["float('nan')", "float('inf')"])
def test_a_deadline_must_be_a_finite_number(tmp_path: Path, value: str) -> None:
    file = tmp_path / "flowsettings.py"
    file.write_text(f"ANSWER_DEADLINE_SECONDS = {value}\n")
    with pytest.raises(SettingsError, match="ANSWER_DEADLINE_SECONDS: must be a positive number"):
        AppSettings.load(file)
