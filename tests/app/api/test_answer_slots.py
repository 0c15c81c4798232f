"""An answer's slot (``API_MAX_ANSWERS``) is held while its work goes on, not while its
stream does: a client that leaves stops the stream at once, but the answer's thread only
stops at its next event, and until then it still uses the model. One user holds at most
``API_MAX_ANSWERS_PER_USER`` of them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from ragloom_app.api.bridge import iterate_in_thread
from ragloom_app.api.capacity import AnswerSlots
from ragloom_app.api.errors import ApiError


def test_a_slot_is_freed_when_the_answers_work_ends_not_when_its_client_leaves() -> None:
    slots = AnswerSlots(1)
    slot = slots.slot("alice")
    go_on, closed = threading.Event(), threading.Event()

    def answer() -> Iterator[str]:
        try:
            yield "first token"
            go_on.wait(10)  # the model's next piece of work (a call waiting its turn)
            yield "second token"
        finally:
            closed.set()

    async def client_that_leaves() -> None:
        stream = iterate_in_thread(answer(), on_end=slot.held_by_work())
        assert await stream.__anext__() == "first token"
        await stream.aclose()

    asyncio.run(client_that_leaves())
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
