"""The app's settings: read from ``flowsettings.py``, overridden by environment variables.

A settings module is a Python file of upper-case names (see the project's
``flowsettings.py``). Names it leaves out keep the defaults below. The file is found at
``$RAGLOOM_SETTINGS``, else ``./flowsettings.py``, else the defaults alone are used.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ENV_OVERRIDES", "FULLTEXT_STORES", "AppSettings", "SettingsError", "chroma_address"]

FULLTEXT_STORES = ("auto", "bm25")
"""The values of ``FULLTEXT_STORE``."""
JOB_QUEUES = ("in-process", "procrastinate")
"""The values of ``JOB_QUEUE``."""
MAX_TRUSTED_PROXIES = 64
"""The most entries ``TRUSTED_PROXIES`` may list."""


class SettingsError(ValueError):
    """A setting is missing, malformed or names something that cannot be imported."""


def _default_llms() -> dict[str, dict[str, Any]]:
    return {"local": {"class": "ragloom.llms.llamacpp.LlamaCppChat"}}


def _default_embeddings() -> dict[str, dict[str, Any]]:
    return {"local": {"class": "ragloom.embeddings.SentenceTransformerEmbeddings"}}


def chroma_address(url: str) -> tuple[str, int, bool]:
    """``(host, port, tls)`` of a ``CHROMA_SERVER`` URL; :class:`SettingsError` if it is not
    ``http://HOST:PORT`` or ``https://HOST:PORT``."""
    parts = urlsplit(url) if isinstance(url, str) else None
    try:
        port = parts.port if parts is not None else None
    except ValueError:
        port = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port:
        raise SettingsError(
            f"CHROMA_SERVER: must be http://HOST:PORT or https://HOST:PORT, not {url!r}"
        )
    return parts.hostname, port, parts.scheme == "https"


@dataclass
class AppSettings:
    """Everything the app reads at startup. Field ``x`` is the setting ``X``."""

    data_dir: Path = Path("appdata")
    database_url: str | None = None
    # The vectors on a Chroma server ("http://host:port", `chroma run`) instead of the
    # embedded Chroma in the data folder (docs/deploy.md).
    chroma_server: str | None = None
    # Where an index's full text lives: "auto" puts it in the app database when that is
    # PostgreSQL (shared by every process) and in a BM25 file in the index's folder when it
    # is SQLite; "bm25" always the file (docs/deploy.md).
    fulltext_store: str = "auto"
    # Where indexing jobs wait (docs/deploy.md, "Indexing jobs"): "in-process" runs them in
    # the app's own threads, with nothing to start; "procrastinate" queues them in the
    # PostgreSQL app database for `ragloom worker` processes, on this machine or others.
    job_queue: str = "in-process"
    # Jobs the in-process queue runs at once (its threads); a worker's own is --concurrency.
    job_workers: int = 1
    # Seconds a running job's worker may go without a heartbeat before it counts as dead
    # and another worker takes the job again.
    job_stall_seconds: float = 30.0
    # Indexing jobs one user may have queued or running; one more upload is refused (429).
    max_jobs_per_user: int = 20
    reasonings: list[str] = field(
        default_factory=lambda: [
            "ragloom_app.reasoning.fullqa.FullQAReasoning",
            "ragloom_app.reasoning.decompose.DecomposeReasoning",
            "ragloom_app.reasoning.react.ReActReasoning",
            "ragloom_app.reasoning.rewoo.ReWOOReasoning",
            "ragloom_app.reasoning.auto.AutoReasoning",
        ]
    )
    default_reasoning: str = "fullqa"
    index_types: list[str] = field(default_factory=lambda: ["ragloom_app.index.file.FileIndex"])
    indices: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"name": "My files", "type": "ragloom_app.index.file.FileIndex", "config": {}}
        ]
    )
    llms: dict[str, dict[str, Any]] = field(default_factory=_default_llms)
    default_llm: str = "local"
    embeddings: dict[str, dict[str, Any]] = field(default_factory=_default_embeddings)
    default_embedding: str = "local"
    # The model the sentence focus ranks the sentences of found passages with (a name in
    # EMBEDDINGS); None: DEFAULT_EMBEDDING's. It embeds nothing that is stored or searched.
    focus_embedding: str | None = None
    first_run_docs: dict[str, Any] | None = None
    disabled_plugins: list[str] = field(default_factory=list)
    # Each plugin's own settings, by distribution name: {"ragloom-plugin-x": {...}}. A
    # plugin reads its dict with app.plugin_settings(name); names are compared loosely.
    plugin_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Names of LLMS a user may choose for a mode's own LLM (ReWOO's planner and solver);
    # DEFAULT_LLM always is one. Empty: the default LLM only, so no question's passages
    # reach a model the admin did not offer (a hosted one, say).
    selectable_llms: list[str] = field(default_factory=list)
    # The longest question, in characters: about 1,000 tokens, a quarter of the default
    # model's context, leaving room for the evidence and the answer.
    max_question_chars: int = 4000
    # Wall-clock seconds an answer may take; past it the answer stops at its next event
    # (between streamed tokens, steps or tool calls) and says it was cut short. On 2 cores
    # with the bundled model the slowest mode takes 15 s a question on average (12x
    # that), and answers queue one at a time: a runaway one must not hold the queue long.
    answer_deadline_seconds: float = 180.0
    # Check every answer's specifics (numbers, versions, names, options, quotes) against
    # the passages it cites, marking what is not found and declining an answer none of
    # whose claims is found (docs/reasoning-modes.md, "Grounding"). False turns the check
    # off for every mode; each mode also has its own setting.
    grounding_check: bool = True
    # -- the web surface (docs/getting-started.md, "The web UI") -----------------
    # One file's size: the index refuses a larger file and gradio refuses to receive one.
    max_file_bytes: int = 200 * 1024 * 1024
    # Files in one upload (one press of "Index"); past it the upload is refused whole.
    max_files_per_upload: int = 100
    # Bytes of one upload request to the UI (all its files), refused before it is read.
    max_upload_request_bytes: int = 1024 * 1024 * 1024
    # Free disk an upload must leave where the UI keeps uploads until they are indexed.
    min_free_disk_bytes: int = 1024 * 1024 * 1024
    # Bytes of any other request body to the UI's API (JSON: a question, a settings form).
    max_request_bytes: int = 4 * 1024 * 1024
    # Events (questions, uploads, page loads) waiting in the UI's queue; more are refused.
    queue_max_size: int = 64
    # Of those, the most one user's may be (with login on): one user's script cannot fill
    # the queue and leave every other user "busy".
    queue_max_per_user: int = 8
    # Answers the HTTP API and the OpenAI endpoint make at once; one more is refused (429).
    api_max_answers: int = 16
    # Of those, the most one user's requests hold at once; one more of theirs is refused.
    api_max_answers_per_user: int = 4
    # Host names the UI answers to besides its own and loopback names (a reverse proxy's).
    allowed_hosts: list[str] = field(default_factory=list)
    # Every request must come from a logged-in user or carry an API key (docs/users.md);
    # off, the server acts for the one local user, as on a laptop.
    require_login: bool = False
    # Mark the session cookie Secure even on plain HTTP: for a TLS-terminating reverse
    # proxy in front (the app reads no X-Forwarded-Proto, so it sees only HTTP).
    secure_cookies: bool = False
    # Reverse proxies (addresses or networks) whose X-Forwarded-For names the client that
    # the login limits count; without them every client behind a proxy is the proxy.
    trusted_proxies: list[str] = field(default_factory=list)
    # -- what indexing may spend (docs/security.md); None keeps the library's default ------
    # Chunks one file may make (50,000) and seconds it may take to be read and chunked (300;
    # a small file 60, and 5 more per MB).
    max_file_chunks: int | None = None
    max_file_seconds: float | None = None
    min_file_seconds: float | None = None
    # Bytes one upload may spend, what its archives unpack to included (2 GiB), and the
    # chunks it may make (100,000).
    max_upload_bytes: int | None = None
    max_upload_chunks: int | None = None
    source: str = "defaults"

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        self.check_limits()

    def check_limits(self) -> None:
        """Raise :class:`SettingsError`, naming the setting, if a limit or list is wrong."""
        for name in _POSITIVE_LIMITS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise SettingsError(
                    f"{name.upper()}: must be a positive whole number, not {value!r}"
                )
        if self.max_file_bytes > MAX_FILE_BYTES_CEILING:
            raise SettingsError(
                f"MAX_FILE_BYTES: at most {MAX_FILE_BYTES_CEILING:,} (what the database's "
                f"column of a file's size holds), not {self.max_file_bytes:,}"
            )
        for name in ("max_file_chunks", "max_upload_bytes", "max_upload_chunks"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise SettingsError(
                    f"{name.upper()}: must be a positive whole number or None, not {value!r}"
                )
        for name in ("answer_deadline_seconds", "max_file_seconds", "min_file_seconds"):
            value = getattr(self, name)
            if value is None and name != "answer_deadline_seconds":
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)  # NaN would make a deadline that never comes
                or value <= 0
            ):
                raise SettingsError(f"{name.upper()}: must be a positive number, not {value!r}")
        least, most = self.min_file_seconds, self.max_file_seconds
        if least is not None and most is not None and least > most:
            raise SettingsError(
                f"MIN_FILE_SECONDS ({least:g}) is more than MAX_FILE_SECONDS ({most:g}): "
                "what a small file may take cannot be more than any file may"
            )
        if not isinstance(self.selectable_llms, list | tuple) or not all(
            isinstance(name, str) for name in self.selectable_llms
        ):
            raise SettingsError(
                f"SELECTABLE_LLMS: must be a list of names in LLMS, not {self.selectable_llms!r}"
            )
        self.plugin_settings = _checked_plugin_settings(self.plugin_settings)
        _check_disabled_plugins(self.disabled_plugins)
        if not isinstance(self.grounding_check, bool):
            raise SettingsError(
                f"GROUNDING_CHECK: must be True or False, not {self.grounding_check!r}"
            )
        if self.focus_embedding is not None and not (
            isinstance(self.focus_embedding, str) and self.focus_embedding
        ):
            raise SettingsError(
                f"FOCUS_EMBEDDING: must be a name in EMBEDDINGS or None, "
                f"not {self.focus_embedding!r}"
            )
        if not isinstance(self.require_login, bool):
            raise SettingsError(f"REQUIRE_LOGIN: must be True or False, not {self.require_login!r}")
        if self.chroma_server is not None:
            chroma_address(self.chroma_server)  # raises SettingsError, saying what is wrong
        if self.job_queue not in JOB_QUEUES:
            raise SettingsError(
                f"JOB_QUEUE: must be one of {', '.join(JOB_QUEUES)}, not {self.job_queue!r}"
            )
        if isinstance(self.job_stall_seconds, bool) or not (
            isinstance(self.job_stall_seconds, int | float) and self.job_stall_seconds >= 1
        ):
            raise SettingsError(
                f"JOB_STALL_SECONDS: must be a number of seconds >= 1, "
                f"not {self.job_stall_seconds!r}"
            )
        if self.fulltext_store not in FULLTEXT_STORES:
            raise SettingsError(
                f"FULLTEXT_STORE: must be one of {', '.join(FULLTEXT_STORES)}, "
                f"not {self.fulltext_store!r}"
            )
        if not isinstance(self.secure_cookies, bool):
            raise SettingsError(
                f"SECURE_COOKIES: must be True or False, not {self.secure_cookies!r}"
            )
        hosts = self.allowed_hosts
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
            raise SettingsError(f"ALLOWED_HOSTS: must be a list of host names, not {hosts!r}")
        self._check_trusted_proxies()

    def _check_trusted_proxies(self) -> None:
        proxies = self.trusted_proxies
        wrong = SettingsError(
            f"TRUSTED_PROXIES: must be a list of at most {MAX_TRUSTED_PROXIES} addresses or "
            f"networks (such as '10.0.0.2' or '10.0.0.0/24'), not {proxies!r}"[:500]
        )
        if not isinstance(proxies, list) or len(proxies) > MAX_TRUSTED_PROXIES:
            raise wrong
        if not all(isinstance(entry, str) for entry in proxies):
            raise wrong
        try:
            for entry in proxies:
                ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            raise wrong from None

    @property
    def database(self) -> str:
        """The SQLAlchemy URL of the app database (SQLite in the data folder by default)."""
        return self.database_url or f"sqlite:///{self.data_dir / 'ragloom.db'}"

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> AppSettings:
        """Read a settings file (see the module docstring), then the environment."""
        settings = cls()
        file = _find_settings_file(path)
        if file is not None:
            settings._apply(_read_module(file))
            settings.source = str(file)
        settings._apply_environment()
        settings.check_limits()
        return settings

    def _apply(self, values: dict[str, Any]) -> None:
        for name, value in values.items():
            attr = name.lower()
            if attr == "source" or attr not in self.__dataclass_fields__:
                continue
            if attr == "data_dir":
                value = Path(value)
            if attr == "disabled_plugins" and isinstance(value, str):
                # From the environment: "a,b" (no list syntax in an environment variable).
                value = [name.strip() for name in value.split(",") if name.strip()]
            setattr(self, attr, value)

    def _apply_environment(self) -> None:
        values = {
            setting: os.environ[variable]
            for variable, setting in ENV_OVERRIDES.items()
            if os.environ.get(variable)
        }
        self._apply(values)


MAX_PLUGIN_SETTINGS = 200
"""Plugins ``PLUGIN_SETTINGS`` may hold settings for (a typo'd copy-paste, not a real need)."""


def _checked_plugin_settings(value: Any) -> dict[str, dict[str, Any]]:
    """``PLUGIN_SETTINGS`` keyed by normalized distribution name; SettingsError if malformed."""
    from ragloom_app.plugins import normalize_name

    if not isinstance(value, dict) or not all(
        isinstance(name, str) and name.strip() and isinstance(own, dict)
        for name, own in value.items()
    ):
        raise SettingsError(
            "PLUGIN_SETTINGS: must be a dict of plugin (distribution) name to a dict of its "
            f"settings, not {value!r}"[:300]
        )
    if len(value) > MAX_PLUGIN_SETTINGS:
        raise SettingsError(
            f"PLUGIN_SETTINGS: settings for {len(value)} plugins; at most "
            f"{MAX_PLUGIN_SETTINGS} (MAX_PLUGIN_SETTINGS)"
        )
    checked: dict[str, dict[str, Any]] = {}
    for name, own in value.items():
        key = normalize_name(name)
        if key in checked:
            raise SettingsError(f"PLUGIN_SETTINGS: {name!r} is given twice (as {key!r})")
        checked[key] = dict(own)
    return checked


MAX_DISABLED_PLUGINS = 200
"""Plugins ``DISABLED_PLUGINS`` may name."""


def _check_disabled_plugins(value: Any) -> None:
    """``DISABLED_PLUGINS`` is a list of names (None or [None] failed every command)."""
    if not isinstance(value, list | tuple) or not all(
        isinstance(name, str) and name.strip() for name in value
    ):
        raise SettingsError(
            f"DISABLED_PLUGINS: must be a list of plugin (distribution) names, not {value!r}"[:300]
        )
    if len(value) > MAX_DISABLED_PLUGINS:
        raise SettingsError(
            f"DISABLED_PLUGINS: {len(value)} names; at most {MAX_DISABLED_PLUGINS} "
            "(MAX_DISABLED_PLUGINS)"
        )


MAX_FILE_BYTES_CEILING = 2**31 - 1
"""The largest MAX_FILE_BYTES: a file's size is kept in a 32-bit column (``sources.size``;
PostgreSQL refuses a larger number, where SQLite would take it)."""

_POSITIVE_LIMITS = (
    "max_question_chars",
    "max_file_bytes",
    "max_files_per_upload",
    "max_upload_request_bytes",
    "min_free_disk_bytes",
    "max_request_bytes",
    "queue_max_size",
    "queue_max_per_user",
    "api_max_answers",
    "api_max_answers_per_user",
    "job_workers",
    "max_jobs_per_user",
)


ENV_OVERRIDES = {
    "RAGLOOM_DATA_DIR": "DATA_DIR",
    "RAGLOOM_DATABASE_URL": "DATABASE_URL",
    "RAGLOOM_CHROMA_SERVER": "CHROMA_SERVER",
    "RAGLOOM_FULLTEXT_STORE": "FULLTEXT_STORE",
    "RAGLOOM_JOB_QUEUE": "JOB_QUEUE",
    "RAGLOOM_LLM": "DEFAULT_LLM",
    "RAGLOOM_FOCUS_EMBEDDING": "FOCUS_EMBEDDING",
    "RAGLOOM_REASONING": "DEFAULT_REASONING",
    "RAGLOOM_DISABLED_PLUGINS": "DISABLED_PLUGINS",
}
"""Environment variables that override a setting of the same meaning."""


def _find_settings_file(path: str | os.PathLike[str] | None) -> Path | None:
    explicit = path or os.environ.get("RAGLOOM_SETTINGS")
    if explicit:
        file = Path(explicit)
        if not file.is_file():
            raise SettingsError(f"settings file not found: {file}")
        return file
    local = Path.cwd() / "flowsettings.py"
    return local if local.is_file() else None


def _read_module(file: Path) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("ragloom_flowsettings", file)
    if spec is None or spec.loader is None:
        raise SettingsError(f"cannot read settings file {file}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise SettingsError(f"error in settings file {file}: {exc}") from exc
    return {name: getattr(module, name) for name in dir(module) if name.isupper()}
