"""ReWOO mode: plan every tool call, run independent ones in parallel, solve once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo import ReWOOAgent, ReWOOPlanner, ReWOOSolver
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.agent_base import AgentReasoning, request_tools
from ragloom_app.reasoning.base import ReasoningInfo, ReasoningState, SettingSpec
from ragloom_app.reasoning.settings import (
    docsearch_top_k_setting,
    focus_setting,
    grounding_setting,
    llm_name_setting,
    precheck_setting,
    steps_setting,
)

__all__ = ["ReWOOReasoning"]


class ReWOOReasoning(AgentReasoning):
    """Reasoning WithOut Observation (Xu et al., 2023) over the request's tools."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(
            id="rewoo",
            name="ReWOO agent",
            description="Plan every tool call first, run the independent ones in parallel, "
            "then answer once from all the evidence: few LLM calls.",
        )

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        return {
            "max_steps": steps_setting(
                "Most plan steps", 3, "Tool calls the planner may write.", maximum=12
            ),
            "top_k": docsearch_top_k_setting(3),
            "focus_sentences": focus_setting(4),
            "planner_llm": llm_name_setting("Planner LLM", "planner"),
            "solver_llm": llm_name_setting("Solver LLM", "solver"),
            "precheck": precheck_setting(),
            "check_grounding": grounding_setting(),
        }

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> ReWOOReasoning:
        values = cls.resolve_settings(settings)
        planner_llm = state.llm_for(values["planner_llm"])
        solver_llm = state.llm_for(values["solver_llm"])
        ledger = EvidenceLedger()
        # Tools that call an LLM (the llm tool) use the solver's: both reason over evidence.
        tools = request_tools(
            state,
            retrievers,
            solver_llm,
            ledger,
            int(values["top_k"]),
            int(values["focus_sentences"]),
        )
        planner = ReWOOPlanner(
            llm=planner_llm,
            tools=[type(tool) for tool in tools.values()],
            max_steps=int(values["max_steps"]),
        )
        agent = ReWOOAgent(
            planner=planner,
            solver=ReWOOSolver(llm=solver_llm, check_grounding=state.grounding_for(values)),
            tools=tools,
            ledger=ledger,
            deadline=state.deadline,
        )
        return cls(agent=agent, **cls.precheck_params(values, state, retrievers))
