"""An answer's slot (``API_MAX_ANSWERS``) is held while its work goes on, not while its
stream does: a client that leaves stops the stream at once, but the answer's thread only
stops at its next event, and until then it still uses the model. One user holds at most
``API_MAX_ANSWERS_PER_USER`` of them. An answer begun (:func:`started`) is closed even when
nothing read it: its client left before its response's body began."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from starlette.requests import Request
from starlette.types import Message

from ragloom_app.api.bridge import iterate_in_thread, started
from ragloom_app.api.capacity import AnswerSlots, Slot, answer_response
from ragloom_app.api.errors import ApiError
from ragloom_app.db.models import LOCAL_USER
from tests.helpers.event_loop import run_on_own_loop


def test_a_slot_is_freed_when_the_answers_work_ends_not_when_its_client_leaves() -> None:
    slots = AnswerSlots(1)
    slot = slots.slot("alice")
    go_on, closed, working = threading.Event(), threading.Event(), threading.Event()

    def answer() -> Iterator[str]:
        try:
            yield "first token"
            working.set()  # the thread asked for more: past its look at the stop flag
            go_on.wait(10)  # the model's next piece of work (a call waiting its turn)
            yield "second token"
        finally:
            closed.set()

    async def client_that_leaves() -> None:
        stream = iterate_in_thread(answer(), on_end=slot.held_by_work())
        assert await stream.__anext__() == "first token"
        # Left while the work goes on; leaving sooner, the thread could see the flag
        # before asking for the next token, and stop at once.
        assert await asyncio.to_thread(working.wait, 10)
        await stream.aclose()

    run_on_own_loop(client_that_leaves())
    slot.give_back()  # what the stream's own cleanup and the response's do: nothing now
    with pytest.raises(ApiError, match="1 answers are being made"):
        slots.take("bob")
    go_on.set()
    assert closed.wait(10)
    deadline = time.monotonic() + 10
    while True:  # given back on the answer's thread, once its work was closed
        try:
            slots.take("bob")
            break
        except ApiError:
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_a_slot_the_work_never_took_is_given_back_by_the_stream() -> None:
    slots = AnswerSlots(1)
    slots.slot("alice").give_back()  # a stream that never began: its response's cleanup
    slots.take("alice")


def test_one_user_holds_at_most_a_share_of_the_slots() -> None:
    """One client opening streams took every slot, and every other user was refused."""
    slots = AnswerSlots(16, per_user=2)
    held = [slots.slot("alice"), slots.slot("alice")]
    with pytest.raises(ApiError, match="2 of your answers are being made"):
        slots.take("alice")
    slots.take("bob")  # another user still finds one
    held[0].give_back()
    slots.take("alice")


def test_the_local_user_is_held_to_the_whole_bound_only() -> None:
    """With login off every request is the local user's: a share would cut the server to
    four answers at once."""
    slots = AnswerSlots(16, per_user=2)
    for _ in range(16):
        slots.take(LOCAL_USER)
    with pytest.raises(ApiError, match="16 answers are being made"):
        slots.take(LOCAL_USER)


def test_a_slot_is_given_back_if_the_answers_thread_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slots = AnswerSlots(1)
    slot = slots.slot("alice")

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    async def stream() -> None:
        # Refused from here on, in the loop's own thread, which is started by now.
        monkeypatch.setattr(threading.Thread, "start", refused)
        async for _ in iterate_in_thread(iter(["token"]), on_end=slot.held_by_work()):
            pass

    with pytest.raises(RuntimeError, match="can't start new thread"):
        run_on_own_loop(stream())
    monkeypatch.undo()
    slots.take("bob")  # nothing holds it


def _answer(closed: threading.Event) -> Iterator[str]:
    try:
        yield "first token"
        yield "second token"
    finally:
        closed.set()


def test_closing_a_begun_answer_closes_it_though_nothing_read_it() -> None:
    closed = threading.Event()
    answer = _answer(closed)  # a second reference, as a traceback or a frame may hold
    begun = started(answer)
    begun.close()
    assert closed.is_set()
    assert list(begun) == []


def test_a_stream_whose_client_left_before_its_body_began_closes_its_answer() -> None:
    slots = AnswerSlots(1)
    closed = threading.Event()
    answer = _answer(closed)  # as above: its last reference is not dropped
    sent: list[Message] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "method": "POST",
        "path": "/ask",
        "headers": [],
    }

    async def events(items: Iterator[str], slot: Slot) -> AsyncIterator[str]:
        async for item in iterate_in_thread(items, on_end=slot.held_by_work()):
            yield item

    async def gone() -> Message:  # the client left while its answer began
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        await asyncio.sleep(0)  # as a server waits for its socket to drain
        sent.append(message)

    async def serve() -> None:
        response = await answer_response(
            Request(scope, gone),
            slots,
            "alice",
            lambda: started(answer),
            stream=events,
            collect=list,
        )
        assert not isinstance(response, list)
        await response(scope, gone, send)

    run_on_own_loop(serve())
    assert [m for m in sent if m["type"] == "http.response.body"] == []  # no body began
    assert closed.is_set()
    slots.take("bob")  # and its slot is free
