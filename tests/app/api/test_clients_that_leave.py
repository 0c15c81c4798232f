"""A client that leaves before its answer is whole (its timeout, a closed tab) stops that
answer, on both endpoints, streamed or not: the answer's work is closed at its next event,
which frees its slot (``API_MAX_ANSWERS``), the model, and its conversation. A client whose
timeout ran out would otherwise leave the answer running to its deadline, and the
``openai`` client, which asks again after a timeout, would queue one more each time.

The app answers with a slow model, one answer at a time (``API_MAX_ANSWERS=1``), on the
embedded stores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import pytest

from tests.helpers.api_server import index_documents, replay_app, served
from tests.helpers.misbehaving_llms import SlowLLM

QUESTION = "How hot is the reactor?"
WORDS = 400
DELAY = 0.05
SLOW = {
    "class": "tests.helpers.misbehaving_llms.SlowLLM",
    "replies": [" ".join(f"w{i}" for i in range(WORDS))],
    "delay": DELAY,
}
WHOLE_ANSWER_SECONDS = WORDS * DELAY
"""What the answer would take to the end: its model alone writes that long."""
CLIENT_TIMEOUT = 1.0


@dataclass
class SlowServer:
    """The served app's URL (ending in ``/``), its API and its slow model."""

    url: str
    api: httpx.Client
    llm: SlowLLM


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlowServer]:
    folder = tmp_path_factory.mktemp("slow")
    app = replay_app(folder, api_max_answers=1)
    app.llm_specs["slow"] = SLOW
    app.settings.default_llm = "slow"
    index_documents(app, folder / "docs")
    llm = app.llm("slow")
    assert isinstance(llm, SlowLLM)
    with served(app) as url, httpx.Client(base_url=f"{url}api/v1", timeout=30) as api:
        yield SlowServer(url, api, llm)


def _wait_for_the_slot(slow: SlowServer, deadline: float) -> None:
    """Return once an answer may start again, failing at ``deadline``: an ask naming an
    index that does not exist takes the one slot and gives it back at once (404), and is
    refused (429 ``busy``) while another answer holds it."""
    cid = slow.api.post("/conversations").json()["id"]
    probe = {"question": QUESTION, "indices": ["No such index"]}
    while (answer := slow.api.post(f"/conversations/{cid}/ask", json=probe)).status_code == 429:
        assert answer.json()["error"]["code"] == "busy"
        assert time.monotonic() < deadline, "the answer the client left still holds its slot"
        time.sleep(0.05)
    assert answer.status_code == 404, answer.text


@pytest.fixture(autouse=True)
def _slot_free(slow: SlowServer) -> None:
    """Each test starts with no answer running (the one before may have left one)."""
    _wait_for_the_slot(slow, time.monotonic() + 2 * WHOLE_ANSWER_SECONDS)


def test_a_v1_client_that_times_out_stops_its_answer(slow: SlowServer) -> None:
    client = openai.OpenAI(
        base_url=f"{slow.url}v1", api_key="sk-local", max_retries=0, timeout=CLIENT_TIMEOUT
    )
    written = len(slow.llm.streamed)
    asked = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(
            model="ragloom-fullqa", messages=[{"role": "user", "content": QUESTION}]
        )
    # Freed at the answer's next word once it was closed: well before its end.
    _wait_for_the_slot(slow, asked + WHOLE_ANSWER_SECONDS / 2)
    assert len(slow.llm.streamed) - written < WORDS


def test_a_v1_stream_left_after_its_first_words_stops_its_answer(slow: SlowServer) -> None:
    client = openai.OpenAI(base_url=f"{slow.url}v1", api_key="sk-local", max_retries=0)
    written = len(slow.llm.streamed)
    asked = time.monotonic()
    stream = client.chat.completions.create(
        model="ragloom-fullqa", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    words = [chunk.choices[0].delta.content for chunk, _ in zip(stream, range(5), strict=False)]
    assert "w0" in "".join(w or "" for w in words)
    stream.close()  # the reader leaves mid-answer
    _wait_for_the_slot(slow, asked + WHOLE_ANSWER_SECONDS / 2)
    assert len(slow.llm.streamed) - written < WORDS


def test_an_api_client_that_times_out_stops_its_answer_and_frees_the_conversation(
    slow: SlowServer,
) -> None:
    cid = slow.api.post("/conversations").json()["id"]
    asked = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        slow.api.post(
            f"/conversations/{cid}/ask", json={"question": QUESTION}, timeout=CLIENT_TIMEOUT
        )
    _wait_for_the_slot(slow, asked + WHOLE_ANSWER_SECONDS / 2)
    # Closed: its answer is stored as far as it went, saying so, and the conversation
    # takes the next question (a stream, left at once).
    turns = slow.api.get(f"/conversations/{cid}").json()["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert turns[1]["content"].endswith("(Stopped before the answer was finished.)")
    again = {"question": QUESTION, "stream": True}
    with slow.api.stream("POST", f"/conversations/{cid}/ask", json=again) as response:
        assert response.status_code == 200


def test_an_answer_past_the_slots_is_refused_saying_when_to_ask_again(slow: SlowServer) -> None:
    client = openai.OpenAI(base_url=f"{slow.url}v1", api_key="sk-local", max_retries=0)
    cid = slow.api.post("/conversations").json()["id"]
    holding = {"question": QUESTION, "stream": True}
    with slow.api.stream("POST", f"/conversations/{cid}/ask", json=holding) as held:
        assert held.status_code == 200  # the one slot is this answer's
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(
                model="ragloom-fullqa", messages=[{"role": "user", "content": QUESTION}]
            )
        assert refused.value.code == "busy"
        assert refused.value.response.headers["Retry-After"] == "1"
        other = slow.api.post("/conversations").json()["id"]
        again = slow.api.post(f"/conversations/{other}/ask", json={"question": QUESTION})
        assert again.status_code == 429 and again.headers["Retry-After"] == "1"
