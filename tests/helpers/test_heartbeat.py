"""The heartbeat the hostile-input tests judge pauses by: it reads a real hold of the GIL,
and leaves the heap from before it out of what a collection meanwhile walks."""

from __future__ import annotations

import gc

from tests.helpers.heartbeat import Heartbeat


def test_work_that_keeps_the_gil_reads_as_a_held_pause() -> None:
    base, exponent = 7, 2_000_000
    with Heartbeat() as beat:
        power = base**exponent  # one C call: no other thread runs until it returns
    assert power.bit_length() > 5_000_000
    assert beat.longest_held_pause > 0.2, (beat.longest_held_pause, beat.longest_pause)


def test_the_heap_from_before_a_beat_is_frozen_while_it_beats() -> None:
    earlier = [[number] for number in range(10_000)]
    with Heartbeat():
        frozen = gc.get_freeze_count()
        assert frozen >= len(earlier)
        made_inside = [[number] for number in range(10_000)]
        assert gc.get_freeze_count() == frozen, "what the block makes is collected as ever"
        del made_inside
    assert gc.get_freeze_count() == 0
