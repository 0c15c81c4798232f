"""ReWOO: plan every tool call first, drop the ones that cannot work, run independent calls
in parallel, solve once."""

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
from ragloom.agents.rewoo.screen import (
    ADDED_SEARCH_TEXT,
    DroppedStep,
    ScreenedPlan,
    input_problem,
    screen_plan,
)
from ragloom.agents.rewoo.solver import ReWOOSolver
from ragloom.agents.rewoo.worker import PlanWorker, StepOutcome

__all__ = [
    "ADDED_SEARCH_TEXT",
    "DroppedStep",
    "Plan",
    "PlanStep",
    "PlanValidationError",
    "PlanWorker",
    "PlanningFailed",
    "ReWOOAgent",
    "ReWOOPlanner",
    "ReWOOSolver",
    "ScreenedPlan",
    "StepOutcome",
    "input_problem",
    "merge_duplicate_steps",
    "parse_plan",
    "parse_plan_json",
    "plan_grammar",
    "plan_levels",
    "plan_schema",
    "screen_plan",
    "substitute_evidence",
    "validate_plan",
]
