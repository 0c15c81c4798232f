"""ReAct mode: think, act, observe, repeat, then answer citing the documents found."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.react import ReActAgent
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.agent_base import AgentReasoning, request_tools
from ragloom_app.reasoning.base import ReasoningInfo, ReasoningState, SettingSpec
from ragloom_app.reasoning.settings import (
    docsearch_top_k_setting,
    focus_setting,
    grounding_setting,
    precheck_setting,
    steps_setting,
)

__all__ = ["ReActReasoning"]


class ReActReasoning(AgentReasoning):
    """ReAct (Yao et al., 2022) over the request's tools."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(
            id="react",
            name="ReAct agent",
            description="Think, call a tool, read its result, repeat until it can answer: "
            "adapts to what it finds, at the cost of more LLM calls.",
        )

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        return {
            "max_steps": steps_setting(
                "Most steps", 5, "LLM calls before the agent must answer with what it found."
            ),
            "top_k": docsearch_top_k_setting(3),
            "focus_sentences": focus_setting(0),
            "search_first": {
                "name": "Search the documents first",
                "value": True,
                "component": "checkbox",
                "info": "Begin with a document search for the question; small models "
                "otherwise tend to answer from memory.",
            },
            "precheck": precheck_setting(),
            "check_grounding": grounding_setting(),
        }

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> ReActReasoning:
        values = cls.resolve_settings(settings)
        ledger = EvidenceLedger()
        tools = request_tools(
            state,
            retrievers,
            state.llm,
            ledger,
            int(values["top_k"]),
            int(values["focus_sentences"]),
        )
        agent = ReActAgent(
            llm=state.llm,
            tools=tools,
            ledger=ledger,
            deadline=state.deadline,
            max_steps=int(values["max_steps"]),
            search_first=bool(values["search_first"]),
            check_grounding=state.grounding_for(values),
        )
        return cls(agent=agent, **cls.precheck_params(values, state, retrievers))
