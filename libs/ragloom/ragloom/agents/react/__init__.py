"""ReAct: think, act, observe, repeat (Yao et al., 2022)."""

from ragloom.agents.react.agent import ReActAgent
from ragloom.agents.react.parser import (
    ReActAction,
    ReActFinish,
    ReActFormatError,
    parse_react_step,
)

__all__ = ["ReActAction", "ReActAgent", "ReActFinish", "ReActFormatError", "parse_react_step"]
