"""The replay LLM as unit tests use it: strict, so every expected call is scripted."""

from __future__ import annotations

from theflow import Param

from ragloom.llms.replay import ReplayLLM

__all__ = ["ScriptedLLM"]


class ScriptedLLM(ReplayLLM):
    """A :class:`~ragloom.llms.replay.ReplayLLM` that fails once its replies run out."""

    replies: list = Param(default_callback=lambda _: [], help="Replies, in order.")
    repeat_last: bool = Param(False, help="Off: a call with no reply left fails.")
