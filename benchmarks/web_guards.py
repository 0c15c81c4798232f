"""What the web guards cost per request: Ragloom's web app against gradio mounted bare.

Two servers of the same UI in one process, on loopback: gradio mounted in a FastAPI app
with nothing in front (the baseline), and ``ragloom_app.web.asgi.build_web_app`` (the
headers with the page's script hashes, the Host/Origin checks, the request guard). Each
round times the same requests against both, alternating; printed are the median
milliseconds per request and the ratio guarded / bare:

- ``GET /``: the page (about 110 KB; the guard holds it whole to hash its scripts);
- ``GET /config``: a JSON answer streamed through;
- ``POST /gradio_api/component_server`` with a 20 KB JSON body (the guard reads and
  scans it; gradio then refuses it), the path every event's body takes.

    .venv/bin/python benchmarks/web_guards.py [--rounds 7] [--requests 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import httpx
from _common import free_port

from ragloom_app.privacy import switch_off_telemetry


def _servers(data_dir: str) -> tuple[str, str, Callable[[], None]]:
    switch_off_telemetry()
    import gradio as gr
    from fastapi import FastAPI

    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings
    from ragloom_app.ui.layout import build_ui, launch_styling
    from ragloom_app.web.asgi import build_web_app
    from ragloom_app.web.server import WebServer

    settings = AppSettings(
        data_dir=data_dir,
        llms={"replay": {"class": "ragloom.llms.replay.ReplayLLM"}},
        default_llm="replay",
        embeddings={"hash": {"class": "ragloom_app.testing.HashEmbeddings"}},
        default_embedding="hash",
    )
    app = BaseApp(settings).start()
    bare_demo = build_ui(app).queue(default_concurrency_limit=1)
    bare = gr.mount_gradio_app(
        FastAPI(), bare_demo, path="/", ssr_mode=False, footer_links=[], **launch_styling()
    )
    bare_server = WebServer(bare, "127.0.0.1", free_port()).start()
    guarded_demo = build_ui(app).queue(default_concurrency_limit=1)
    port = free_port()
    web = build_web_app(
        guarded_demo, settings, host="127.0.0.1", port=port, styling=launch_styling()
    )
    guarded_server = WebServer(web.asgi, "127.0.0.1", port, on_close=web.stop).start()

    def close() -> None:
        guarded_server.close()
        bare_server.close()

    return bare_server.url, guarded_server.url, close


def _time(client: httpx.Client, method: str, url: str, body: bytes | None, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        client.request(method, url, content=body, headers={"Content-Type": "application/json"})
    return (time.perf_counter() - start) / n * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    payload = b'{"data": ["' + b"x" * 20_000 + b'"], "session_hash": "b", "component_id": 1}'
    cases = [
        ("GET /", "GET", "", None),
        ("GET /config", "GET", "config", None),
        ("POST 20 KB JSON", "POST", "gradio_api/component_server", payload),
    ]
    with tempfile.TemporaryDirectory() as data_dir:
        bare_url, guarded_url, close = _servers(data_dir)
        try:
            times: dict[tuple[str, str], list[float]] = {}
            with httpx.Client(timeout=30) as client:
                for _ in range(args.rounds):
                    for name, method, path, body in cases:
                        for kind, base in (("bare", bare_url), ("guarded", guarded_url)):
                            ms = _time(client, method, base + path, body, args.requests)
                            times.setdefault((name, kind), []).append(ms)
        finally:
            close()
    print(f"{'request':18} {'bare ms':>8} {'guarded ms':>11} {'ratio':>6}")
    for name, *_ in cases:
        bare = statistics.median(times[name, "bare"])
        guarded = statistics.median(times[name, "guarded"])
        print(f"{name:18} {bare:8.2f} {guarded:11.2f} {guarded / bare:6.2f}")


if __name__ == "__main__":
    main()
