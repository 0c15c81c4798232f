"""The stop signals of a long command (:mod:`ragloom_app.stop_signals`): Ctrl-C, SIGTERM
and SIGHUP wait for a section marked ``stop_deferred`` to end, and a second one while the
first is handled is ignored, so the command's clean-up runs to its end."""

from __future__ import annotations

import signal
from types import FrameType

import pytest

from ragloom_app.stop_signals import StopRequested, stop_deferred, stop_signals_raise


@pytest.mark.parametrize(
    ("stop", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, StopRequested)],
    ids=["ctrl-c", "SIGTERM"],
)
def test_a_stop_waits_for_a_deferred_section_and_a_second_is_ignored(
    stop: signal.Signals, raised: type[BaseException]
) -> None:
    """Ctrl-C raised at once, in a section a stop must not cut in two (an import's
    clean-up): a second Ctrl-C there left half an index."""
    before = signal.getsignal(stop)
    done: list[str] = []
    with pytest.raises(raised), stop_signals_raise():
        with stop_deferred():
            signal.raise_signal(stop)
            signal.raise_signal(stop)  # pressed again
            done.append("the section")
        done.append("after it")  # not reached: the stop is raised as the section ends
    assert done == ["the section"]
    assert signal.getsignal(stop) is before


def test_ctrl_c_outside_a_deferred_section_is_a_keyboard_interrupt_at_once() -> None:
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), stop_signals_raise():
        signal.raise_signal(signal.SIGINT)
        done.append("after it")
    assert done == []


def test_a_ctrl_c_handler_of_someone_elses_is_left_alone() -> None:
    """Only Python's own (which raises KeyboardInterrupt) is replaced for the command."""
    caught: list[int] = []

    def theirs(number: int, frame: FrameType | None) -> None:
        caught.append(number)

    previous = signal.signal(signal.SIGINT, theirs)
    try:
        with stop_signals_raise(), stop_deferred():
            assert signal.getsignal(signal.SIGINT) is theirs
            signal.raise_signal(signal.SIGINT)
        assert caught == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
