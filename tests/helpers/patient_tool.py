"""An in-process tool that works until it is told to stop: for the tests of cancelling
tool calls (a closed answer, the answer's deadline)."""

from __future__ import annotations

import time
from typing import ClassVar

from pydantic import BaseModel

from ragloom.agents.tools import BaseTool, ToolResult
from ragloom.agents.tools.cancel import cancel_requested

__all__ = ["PatientTool"]


class PatientTool(BaseTool):
    """Answers at once for the input "now"; for any other, works (as a call to a remote
    service that never answers) until its call is cancelled, noting the input in
    ``started``, then in ``cancelled``."""

    class Arguments(BaseModel):
        text: str

    name: ClassVar[str] = "patient"
    description: ClassVar[str] = "Waits for a service that may never answer."
    sandboxed: ClassVar[bool] = False

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, PatientTool.Arguments)
        if arguments.text != "now":
            self.started.append(arguments.text)
        while arguments.text != "now":
            if cancel_requested():
                self.cancelled.append(arguments.text)
                return ToolResult.failure("cancelled", "told to stop")
            time.sleep(0.01)
        return ToolResult(content="done")
