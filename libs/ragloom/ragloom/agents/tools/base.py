"""The tool interface: a name, a description, typed arguments and a structured result.

Arguments are a pydantic model, so the same JSON schema goes into prompts and into native
tool calling, and malformed input from an LLM becomes a clear error instead of a crash.
Tools are built per request (they may hold a request's retrievers); none is shared state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from ragloom.llms.base import Usage

if TYPE_CHECKING:
    from ragloom.agents.evidence import EvidenceLedger
    from ragloom.llms.base import ChatLLM
    from ragloom.retrieval import Retriever, SentenceFocus

__all__ = ["RESULT_KINDS", "BaseTool", "ResultKind", "ToolContext", "ToolError", "ToolResult"]

ResultKind = Literal["text", "number", "passages"]
"""What a tool's result is, so a plan can tell which tools may take it as input:
``passages`` found in the documents (``docsearch``), a ``number`` (``calculator``), or
any other ``text`` (``llm``, and a tool that does not say), which may happen to be a number."""

RESULT_KINDS: frozenset[ResultKind] = frozenset(("text", "number", "passages"))
"""Every :data:`ResultKind`: what a tool that does not say otherwise accepts."""


@dataclass(frozen=True)
class ToolContext:
    """What the tools of one request may use: its LLM, retrievers and evidence ledger."""

    llm: ChatLLM
    retrievers: Sequence[Retriever] = ()
    ledger: EvidenceLedger | None = None
    top_k: int = 3
    observation_tokens: int = 600
    focus: SentenceFocus | None = None  # docsearch shows the sentences nearest its query


@dataclass(frozen=True)
class ToolError:
    """Why a tool call failed: a stable ``code``, a message, and whether to try again."""

    code: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class ToolResult:
    """Either ``content`` (with the ``sources`` it came from, for citations) or an ``error``.

    A tool that calls an LLM reports the call's ``usage``, so the request's totals count it.
    """

    content: str = ""
    sources: list[Any] = field(default_factory=list)
    error: ToolError | None = None
    usage: Usage | None = None  # tokens spent, when the tool called an LLM

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.error is None

    @classmethod
    def failure(cls, code: str, message: str, *, retryable: bool = False) -> ToolResult:
        """A failed result."""
        return cls(error=ToolError(code, message, retryable))

    def as_observation(self) -> str:
        """The text an agent sees: the content, or the error spelled out."""
        if self.error is None:
            return self.content
        again = " (worth retrying)" if self.error.retryable else ""
        return f"Error [{self.error.code}]{again}: {self.error.message}"


class BaseTool:
    """A tool. Subclasses set ``name``, ``description``, ``Arguments`` and implement ``run``.

    Three class attributes say how the :class:`~ragloom.agents.tools.runner.ToolRunner`
    runs a call (see docs/plugins.md):

    - ``sandboxed`` (default ``True``): in a worker process of the ``"tools"`` sandbox
      (:mod:`ragloom.sandbox`), under its memory limit, killed at the call's timeout. The
      tool object goes to the worker pickled, so its class must be importable by name (at
      a module's top level) and its attributes picklable; so must its result. A tool that
      needs the request (its LLM, retrievers or ledger, through an overridden
      :meth:`from_context`) cannot cross: it sets ``sandboxed = False`` and runs in a
      thread of the agent's process, where it must stop when
      :func:`~ragloom.agents.tools.cancel.cancel_requested` says so.
    - ``deterministic`` (default ``False``): the same input always gives the same outcome,
      so a call that timed out or crashed is not tried again (one that ran out of memory
      never is).
    - ``timeout`` (default ``None``): the tool's own time limit in seconds; a call gets the
      smaller of it and the runner's.

    Two more, and :meth:`check_input`, let a ReWOO plan drop a step that cannot work
    before anything runs (see docs/plugins.md): ``result_kind`` (default ``"text"``) says
    what the tool's result is, and ``accepts`` (default: every kind) the kinds of earlier
    results its input may refer to (``#E2``).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type[BaseModel]]
    sandboxed: ClassVar[bool] = True
    deterministic: ClassVar[bool] = False
    timeout: ClassVar[float | None] = None
    result_kind: ClassVar[ResultKind] = "text"
    accepts: ClassVar[frozenset[ResultKind]] = RESULT_KINDS

    @classmethod
    def check_input(cls, text: str) -> str | None:
        """Why ``text`` (an input with every reference filled in) cannot work, or ``None``.

        A check without side effects that needs no request: it runs in the agent's
        process before the call, on inputs within the runner's input limit, and must be
        quick (parse, do not compute). The default accepts everything."""
        return None

    @classmethod
    def from_context(cls, context: ToolContext) -> BaseTool:
        """The tool for one request; override when it needs the LLM or the retrievers."""
        return cls()

    def run(self, arguments: BaseModel) -> ToolResult:
        """Do the work for validated ``arguments``."""
        raise NotImplementedError(f"{type(self).__name__} must implement run()")

    @classmethod
    def parameters_schema(cls) -> dict[str, Any]:
        """The JSON schema of the arguments (for prompts and native tool calling)."""
        return cls.Arguments.model_json_schema()

    @classmethod
    def parse_arguments(cls, raw: str | dict[str, Any]) -> BaseModel:
        """Arguments from what an LLM wrote: a JSON object, or plain text for one field.

        Raises ``ValueError`` with a readable message when the input does not fit.
        """
        data: Any = raw
        if isinstance(raw, str):
            text = raw.strip()
            if text.startswith("```"):
                text = text.strip("`").removeprefix("json").strip()
            try:
                data = json.loads(text) if text[:1] in "{[" else None
            except (json.JSONDecodeError, RecursionError):  # "[[[[…": nested past the stack
                data = None
            if not isinstance(data, dict):
                fields = list(cls.Arguments.model_fields)
                # Text is the one field's value; without any field there is none to fill.
                if not fields or (len(fields) != 1 and not data):
                    raise ValueError(f"{cls.name} expects a JSON object with {fields}")
                data = {fields[0]: text.strip().strip('"').strip("'")}
        try:
            return cls.Arguments.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"invalid arguments for {cls.name}: {problems}") from None

    def invoke(self, raw: str | dict[str, Any]) -> ToolResult:
        """Parse ``raw`` and run; bad input and exceptions become a failed result.

        Only ``MemoryError`` passes: the runner reports it as ``out_of_memory``."""
        try:
            arguments = self.parse_arguments(raw)
        except ValueError as exc:
            return ToolResult.failure("invalid_arguments", str(exc))
        try:
            return self.run(arguments)
        except MemoryError:
            raise  # the sandbox reports it as the memory limit, not as a bug of the tool
        except Exception as exc:  # a tool bug must not end the agent's run
            return ToolResult.failure("tool_failed", f"{type(exc).__name__}: {exc}")
