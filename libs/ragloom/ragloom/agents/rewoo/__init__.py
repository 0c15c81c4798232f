"""ReWOO: plan every tool call first, run independent calls in parallel, solve once."""

from ragloom.agents.rewoo.agent import ReWOOAgent
from ragloom.agents.rewoo.plan import (
    Plan,
    PlanStep,
    PlanValidationError,
    merge_duplicate_steps,
    parse_plan,
    parse_plan_json,
    plan_levels,
    substitute_evidence,
    validate_plan,
)
from ragloom.agents.rewoo.planner import PlanningFailed, ReWOOPlanner, plan_grammar, plan_schema
from ragloom.agents.rewoo.solver import ReWOOSolver
from ragloom.agents.rewoo.worker import PlanWorker, StepOutcome

__all__ = [
    "Plan",
    "PlanStep",
    "PlanValidationError",
    "PlanWorker",
    "PlanningFailed",
    "ReWOOAgent",
    "ReWOOPlanner",
    "ReWOOSolver",
    "StepOutcome",
    "merge_duplicate_steps",
    "parse_plan",
    "parse_plan_json",
    "plan_grammar",
    "plan_levels",
    "plan_schema",
    "substitute_evidence",
    "validate_plan",
]
