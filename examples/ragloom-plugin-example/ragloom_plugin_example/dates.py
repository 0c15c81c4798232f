"""The ``date_calc`` tool: days between two dates, or a date some days after another."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools import BaseTool, ToolResult

__all__ = ["DateCalcTool"]

# What small models write in plans instead of JSON: "2024-01-01 to 2024-03-01" or
# "2024-01-31 + 30 days".
_BETWEEN = re.compile(r"^\s*(\S+)\s+(?:to|and|-|until)\s+(\S+)\s*$", re.I)
_ADD = re.compile(r"^\s*(\S+)\s*([+-])\s*(\d+)\s*days?\s*$", re.I)


class DateArguments(BaseModel):
    """Either ``end`` (days between) or ``add_days`` (a date that many days later)."""

    start: str = Field(description="A date, YYYY-MM-DD.")
    end: str | None = Field(None, description="Another date: count the days to it.")
    add_days: int | None = Field(None, description="Days to add (negative: go back).")


class DateCalcTool(BaseTool):
    """Date arithmetic, exact where small models miscount.

    Like every tool it runs in Ragloom's tool sandbox, a worker process (it defines no
    ``from_context``, so it needs nothing of the request). Its answers depend on its input
    alone: ``deterministic`` tells Ragloom not to try a timed-out call again, and it gets a
    short time limit of its own.
    """

    name: ClassVar[str] = "date_calc"
    description: ClassVar[str] = (
        'Date arithmetic. {"start": "2024-01-01", "end": "2024-03-01"} gives the days '
        'between two dates; {"start": "2024-01-31", "add_days": 30} the date 30 days later.'
    )
    Arguments: ClassVar[type[BaseModel]] = DateArguments
    deterministic: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 5.0

    @classmethod
    def parse_arguments(cls, raw: str | dict[str, Any]) -> BaseModel:
        if isinstance(raw, str):
            between, add = _BETWEEN.match(raw), _ADD.match(raw)
            if between:
                raw = {"start": between.group(1), "end": between.group(2)}
            elif add:
                sign = -1 if add.group(2) == "-" else 1
                raw = {"start": add.group(1), "add_days": sign * int(add.group(3))}
        return super().parse_arguments(raw)

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, DateArguments)
        if (arguments.end is None) == (arguments.add_days is None):
            return ToolResult.failure("invalid_arguments", "give either 'end' or 'add_days'")
        try:
            start = date.fromisoformat(arguments.start.strip())
            end = date.fromisoformat(arguments.end.strip()) if arguments.end else None
        except ValueError as exc:
            return ToolResult.failure("invalid_date", f"dates are written YYYY-MM-DD: {exc}")
        if end is not None:
            days = (end - start).days
            return ToolResult(content=f"{days} days from {start} to {end}")
        try:
            later = start + timedelta(days=arguments.add_days or 0)
        except OverflowError:
            return ToolResult.failure("out_of_range", "the date falls outside years 1-9999")
        return ToolResult(content=f"{start} + {arguments.add_days} days = {later} ({later:%A})")
