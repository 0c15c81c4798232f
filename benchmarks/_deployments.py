"""The deployments ``load.py`` drives: one app in the benchmark's process, or several
``ragloom serve`` processes behind haproxy with ``ragloom worker`` processes indexing.

Each yields a :class:`Deployment`: the address the clients use, and the API keys of the
users made for the run (the askers first, then the uploaders). The users, their keys and
the State of the Union speech in the index ``sotu`` are made through an app in this
process before anything is served, so that every deployment starts from the same state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from _common import bench_settings, free_port

from ragloom_app.app import BaseApp
from ragloom_app.settings import AppSettings

__all__ = ["PASSWORD", "Deployment", "behind_haproxy", "in_process", "load_settings"]

PASSWORD = "correct horse battery"
INDEX = "sotu"


@dataclass
class Deployment:
    """Where the clients go (a base URL ending in ``/``), the users' API keys and names,
    and each app process's own URL (to warm each one up)."""

    url: str
    keys: list[str]
    names: list[str]
    apps: list[str] = field(default_factory=list)


def _prepared(settings: AppSettings, speech: Path, names: list[str]) -> tuple[BaseApp, list[str]]:
    """An app on ``settings`` with the speech indexed and an account and API key for each
    of ``names``; the app and the keys."""
    app = BaseApp(settings).start()
    app.indices.get(INDEX).get_indexing_pipeline({}).run([speech])
    keys = []
    for name in names:
        user = app.accounts.add_user(name, PASSWORD)
        keys.append(app.accounts.create_key(user, "load")[1])
    return app, keys


def load_settings(
    data_dir: Path, llm: dict[str, Any] | None, servers: tuple[str, str] | None
) -> AppSettings:
    """flowsettings.py's settings for the run: login on, one index ``sotu``, ``llm`` as the
    default LLM (flowsettings.py's own if ``None``), and with ``servers`` (a database URL and
    a Chroma server URL) the rows, full text and vectors on those."""
    settings = replace(bench_settings(data_dir, INDEX), require_login=True)
    if llm is not None:
        settings.llms = {"load": llm}
        settings.default_llm = "load"
    if servers is not None:
        settings.database_url, settings.chroma_server = servers
    return settings


@contextlib.contextmanager
def in_process(settings: AppSettings, speech: Path, names: list[str]) -> Iterator[Deployment]:
    """One app served as ``ragloom serve`` serves it, in this process."""
    from ragloom_app.ui.server import serve

    app, keys = _prepared(settings, speech, names)
    running = serve(app, port=free_port(), first_run_docs=False, block=False)
    try:
        yield Deployment(running.url, keys, names, apps=[running.url])
    finally:
        running.close()


def _settings_file(settings: AppSettings, path: Path) -> Path:
    """A settings file holding what the served processes need of ``settings`` (the
    database, Chroma server and data folder come from the environment)."""
    embedding, focus = settings.default_embedding, settings.focus_embedding
    used = {name: settings.embeddings[name] for name in (embedding, focus) if name}
    path.write_text(
        f"EMBEDDINGS = {used!r}\n"
        f"DEFAULT_EMBEDDING = {embedding!r}\n"
        f"FOCUS_EMBEDDING = {focus!r}\n"
        f"LLMS = {settings.llms!r}\n"
        f"DEFAULT_LLM = {settings.default_llm!r}\n"
        f"INDICES = {settings.indices!r}\n"
        "FIRST_RUN_DOCS = None\n"
        "REQUIRE_LOGIN = True\n"
        'JOB_QUEUE = "procrastinate"\n',
        encoding="utf-8",
    )
    return path


@contextlib.contextmanager
def behind_haproxy(
    settings: AppSettings,
    speech: Path,
    names: list[str],
    workdir: Path,
    processes: int,
    workers: int,
) -> Iterator[Deployment]:
    """``processes`` ``ragloom serve`` processes behind Debian's haproxy on loopback, and
    ``workers`` ``ragloom worker`` processes running the upload jobs (procrastinate in the
    app database); every process shares the database, the Chroma server and one data
    folder (``settings`` must name the servers)."""
    from tests.helpers.haproxy import haproxy_in_front
    from tests.helpers.job_workers import WorkerSetup
    from tests.helpers.serve_process import serve_process

    assert settings.database_url and settings.chroma_server, "the servers are needed"
    settings = replace(settings, job_queue="procrastinate")
    _, keys = _prepared(settings, speech, names)
    setup = WorkerSetup(
        workdir,
        _settings_file(settings, workdir / "settings.py"),
        settings.data_dir,
        settings.database_url,
        settings.chroma_server,
    )
    with contextlib.ExitStack() as stack:
        stack.callback(setup.stop)
        for _ in range(workers):
            setup.start_worker()
        urls = []
        for n in range(processes):
            url, _ = stack.enter_context(
                serve_process(setup.env(), workdir / f"app{n}.log", cwd=workdir)
            )
            urls.append(url)
        setup.wait_ready()
        ports = [int(url.rsplit(":", 1)[1]) for url in urls]
        port = stack.enter_context(haproxy_in_front(ports))
        yield Deployment(f"http://127.0.0.1:{port}/", keys, names, apps=[f"{u}/" for u in urls])
