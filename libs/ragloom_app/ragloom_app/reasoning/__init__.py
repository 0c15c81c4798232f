"""Reasoning modes: how an answer is made. Each is a :class:`BaseReasoning` plugin."""

from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState

__all__ = ["BaseReasoning", "ReasoningInfo", "ReasoningState"]
