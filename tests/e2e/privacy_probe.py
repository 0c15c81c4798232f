"""Run the app as a user would, recording every network destination the process uses.

Started by test_privacy.py in a fresh interpreter (so the hook sees imports too). Usage:
``python privacy_probe.py DATA_DIR DOC OUT.json``. It starts the UI on a free loopback
port, indexes DOC, asks a question through the UI's HTTP API and writes the destinations.
"""

import json
import socket
import sys
import threading

destinations: list[list[str]] = []
_lock = threading.Lock()


def _record(event: str, args: tuple) -> None:
    if event == "socket.connect":
        sock, address = args[0], args[1]
        host = address[0] if isinstance(address, tuple) else str(address)
        # A Unix socket is a file of this machine (the sandbox's fork server listens on one).
        kind = "unix" if sock.family == socket.AF_UNIX else "connect"
    elif event == "socket.getaddrinfo":
        host, kind = str(args[0]), "resolve"
    else:
        return
    with _lock:
        destinations.append([kind, str(host)])


sys.addaudithook(_record)


def main() -> None:
    data_dir, document, out = sys.argv[1:4]
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings
    from ragloom_app.ui.server import serve

    app = BaseApp(AppSettings(data_dir=data_dir)).start()
    # The probe's own client comes after the app, as a user's browser would.
    from gradio_client import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    demo = serve(app, host="127.0.0.1", port=port, first_run_docs=False, block=False)
    try:
        index = app.indices.indices[0]
        outcomes = index.get_indexing_pipeline({}).run([document])
        assert outcomes[0].status == "indexed", outcomes
        from ragloom_app.pages.chat import AnswerFinished, ChatPage

        *_, finished = ChatPage(app).ask("At what temperature does the reactor run?")
        assert isinstance(finished, AnswerFinished)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        api = client.view_api(return_format="dict", print_info=False)
        result = {"answer": finished.record.answer, "api_endpoints": len(api or {})}
    finally:
        demo.close()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"destinations": destinations, **result}, handle)


if __name__ == "__main__":
    main()
