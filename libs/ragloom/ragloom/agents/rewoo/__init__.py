"""ReWOO: plan every tool call first, run independent calls in parallel, solve once."""

from ragloom.agents.rewoo.plan import (
    Plan,
    PlanStep,
    PlanValidationError,
    parse_plan,
    plan_levels,
    substitute_evidence,
    validate_plan,
)

__all__ = [
    "Plan",
    "PlanStep",
    "PlanValidationError",
    "parse_plan",
    "plan_levels",
    "substitute_evidence",
    "validate_plan",
]
