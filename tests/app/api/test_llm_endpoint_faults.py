"""The LLM endpoint failing under a served app: down, slow past its timeout, cut off in the
middle of a stream, or sending what is not JSON.

The app's LLM is an ``OpenAIChat`` on the labelled loopback stand-in
(``ragloom_app.testing.openai_standin``), told to fail in each way; the app is served as
``ragloom serve`` serves it and asked through the HTTP API, on the embedded stores. Each
time the user gets a clear answer saying what failed, the conversation holds whole turns
only (the question, then an answer that says it failed), other users are served meanwhile,
and once the endpoint is well the next question in the same conversation is answered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ragloom_app.testing.openai_standin import FakeEndpoint, fake_openai
from tests.helpers.api_server import index_documents, replay_app, served

ANSWER = "The Zorblax reactor runs at 451 kelvin [1]."
QUESTION = "How hot does the Zorblax reactor run?"
TIMEOUT = 30.0  # the LLM's: seconds before a request is abandoned
SHORT_TIMEOUT = 1.0  # the LLM's in the test of a slow endpoint


@dataclass
class Served:
    """The served app's API, and the stand-in endpoint its LLM talks to."""

    api: httpx.Client
    endpoint: FakeEndpoint


@pytest.fixture
def served_app(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Served]:
    """The app on the stand-in; its LLM's timeout is :data:`TIMEOUT` unless the test gives
    another (``indirect`` parametrization)."""
    timeout = getattr(request, "param", TIMEOUT)
    with fake_openai() as endpoint:
        endpoint.reply = ANSWER
        app = replay_app(tmp_path)
        app.llm_specs["remote"] = {
            "class": "ragloom.llms.openai_compat.OpenAIChat",
            "base_url": endpoint.url,
            "model": "stand-in",
            "server_kind": "openai",
            "timeout": timeout,
            "max_retries": 1,
        }
        app.settings.default_llm = "remote"
        index_documents(app, tmp_path / "docs")
        with served(app) as url, httpx.Client(base_url=f"{url}api/v1", timeout=60) as api:
            yield Served(api, endpoint)


def _ask(api: httpx.Client, conversation: str) -> dict[str, object]:
    answer = api.post(f"/conversations/{conversation}/ask", json={"question": QUESTION})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def _turns(api: httpx.Client, conversation: str) -> list[tuple[str, str]]:
    messages = api.get(f"/conversations/{conversation}").json()["messages"]
    return [(m["role"], m["content"]) for m in messages]


def _failed_then_recovers(app: Served, says: str) -> None:
    """Ask while the endpoint fails: a clear answer and whole turns; then, the endpoint
    well again, the same conversation goes on."""
    conversation = app.api.post("/conversations").json()["id"]
    failed = _ask(app.api, conversation)
    assert says in str(failed["answer"]) and failed["citations"] == []
    errors = [s for s in failed["steps"] if s.get("error")]  # type: ignore[union-attr]
    assert errors and says in errors[0]["error"]
    assert _turns(app.api, conversation) == [("user", QUESTION), ("assistant", failed["answer"])]

    app.endpoint.failures, app.endpoint.delay = 0, 0.0
    app.endpoint.cut_after, app.endpoint.malformed = None, False
    answered = _ask(app.api, conversation)
    assert answered["answer"] == ANSWER and answered["citations"]
    assert _turns(app.api, conversation)[2:] == [("user", QUESTION), ("assistant", ANSWER)]


def test_an_endpoint_that_is_down_is_retried_then_said_to_be_failing(served_app: Served) -> None:
    served_app.endpoint.failures, served_app.endpoint.failure_status = 100, 503
    _failed_then_recovers(served_app, "503")
    assert served_app.endpoint.requests == 3  # one try and one retry, then the recovery


def test_a_transient_failure_is_retried_and_the_user_sees_only_the_answer(
    served_app: Served,
) -> None:
    served_app.endpoint.failures = 1
    conversation = served_app.api.post("/conversations").json()["id"]
    assert _ask(served_app.api, conversation)["answer"] == ANSWER
    assert served_app.endpoint.requests == 2


@pytest.mark.parametrize("served_app", [SHORT_TIMEOUT], indirect=True)
def test_an_endpoint_slow_past_its_timeout_fails_while_others_are_served(
    served_app: Served,
) -> None:
    served_app.endpoint.delay = SHORT_TIMEOUT * 5
    conversation = served_app.api.post("/conversations").json()["id"]
    failures: list[BaseException] = []

    def slow_answer() -> None:
        try:
            _failed_then_recovers(served_app, f"did not answer within {SHORT_TIMEOUT} s")
        except BaseException as exc:  # the test's own assertion, raised below
            failures.append(exc)

    slow = threading.Thread(target=slow_answer)
    slow.start()
    deadline = time.monotonic() + 30
    while served_app.endpoint.requests == 0:  # until the answer waits on the endpoint
        assert time.monotonic() < deadline and slow.is_alive()
        time.sleep(0.01)
    listed = served_app.api.get("/conversations")
    assert slow.is_alive()  # the list came while the answer still waited
    assert listed.status_code == 200 and conversation in {c["id"] for c in listed.json()}
    slow.join(60)
    assert not slow.is_alive()
    if failures:
        raise failures[0]


def test_a_stream_cut_off_midway_is_not_taken_for_an_answer(served_app: Served) -> None:
    served_app.endpoint.cut_after = 3
    conversation = served_app.api.post("/conversations").json()["id"]
    answer = _ask(served_app.api, conversation)
    text = str(answer["answer"])
    # What came is kept, marked as broken off; no citation is given to half an answer.
    assert text.startswith("The Zorblax reactor ") and "451 kelvin" not in text
    assert "the reply broke off after 3 pieces" in text and answer["citations"] == []
    assert _turns(served_app.api, conversation) == [("user", QUESTION), ("assistant", text)]
    served_app.endpoint.cut_after = None
    assert _ask(served_app.api, conversation)["answer"] == ANSWER


def test_a_stream_that_is_not_json_is_a_clear_failure(served_app: Served) -> None:
    served_app.endpoint.malformed = True
    _failed_then_recovers(served_app, "sent a reply that is not JSON")
