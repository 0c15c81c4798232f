"""ReAct's steps so far, laid out as the messages of the model's next call.

Two layouts:

* **turns** (the default, and the only one most endpoints allow): the question comes with
  what a search for it found, each step the model wrote is an assistant message and each
  observation a user message starting ``Observation:``; the model writes every step in a
  new turn. On the 0.5B model, 26 of 74 benchmark questions right against 19.
* **one open turn** (``ReActAgent.open_turn``, for LLMs that can continue an assistant
  turn, :attr:`~ragloom.llms.base.ChatLLM.continues_assistant_turn`): the whole scratchpad
  stays in the assistant's own turn, which the model continues; the first search's query
  is the model's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ragloom.llms.base import ChatMessage

__all__ = ["ReActTranscript"]

OPEN_FINAL = " I must answer now with what I found.\nFinal Answer:"
# A new turn has no "Thought:" to continue, so each observation says how to go on: without
# it the 0.5B model (through llama-cpp-python's server) copied its previous step instead.
NEXT_STEP = "Continue with Thought:"
TURN_FINAL = "You have no steps left. Write Final Answer: and the answer from what you found."
SEARCHED = "The documents were searched for the question."


@dataclass
class ReActTranscript:
    """The question, the steps taken and their observations."""

    system: str
    question: str
    open_turn: bool
    opening: str = "Thought:"
    searched: str | None = None
    steps: list[tuple[str, str]] = field(default_factory=list)

    def scratchpad(self) -> str:
        """The open turn's text: the opening, then each step and its observation."""
        return self.opening + "".join(f"{w}\nObservation: {o}\nThought:" for w, o in self.steps)

    def messages(self, final: bool = False) -> list[ChatMessage]:
        """The next call's messages; ``final`` asks for the answer now."""
        if self.open_turn:
            pad = self.scratchpad() + (OPEN_FINAL if final else "")
            return [
                self._system(),
                ChatMessage("user", self.question),
                ChatMessage("assistant", pad),
            ]
        ask = TURN_FINAL if final else NEXT_STEP
        turns = [self._first_user_turn()]
        for written, observation in self.steps:
            turns += [ChatMessage("assistant", written), self._observation(observation)]
        if self.searched is not None or self.steps:
            last = turns.pop()
            turns.append(ChatMessage("user", f"{last.content}\n\n{ask}"))
        elif final:
            turns = [ChatMessage("user", f"{self.question}\n\n{ask}")]
        return [self._system(), *turns]

    def step_text(self, written: str) -> str:
        """The whole step the model just wrote (in an open turn, with the line it continued)."""
        if not self.open_turn:
            return written
        pad = self.scratchpad()
        return pad[pad.rfind("Thought:") :] + written

    def add(self, written: str, observation: str) -> None:
        """Record a step (as the model wrote it) and what it observed."""
        self.steps.append((written, observation))

    def tokens(self, count: Callable[[str], int]) -> int:
        """Tokens of the next call's messages, counted from the messages themselves."""
        return sum(count(m.content) for m in self.messages())

    def _system(self) -> ChatMessage:
        return ChatMessage("system", self.system)

    def _first_user_turn(self) -> ChatMessage:
        if self.searched is None:
            return ChatMessage("user", self.question)
        content = f"Question: {self.question}\n\n{SEARCHED}\nObservation: {self.searched}"
        return ChatMessage("user", content)

    @staticmethod
    def _observation(observation: str) -> ChatMessage:
        return ChatMessage("user", f"Observation: {observation}")
