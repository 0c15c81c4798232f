"""The request and response shapes of the OpenAI-compatible endpoint (``/v1``): the
fields of OpenAI's Chat Completions that Ragloom reads or fills, and ``ragloom``, the
documented extra field that carries citations (standard clients ignore it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChatCompletion",
    "ChatCompletionRequest",
    "ChatMessageIn",
    "ModelList",
    "ModelOut",
    "RagloomExtra",
    "TextPart",
]

MAX_MESSAGES = 200
"""Most messages one request may hold (the earlier ones are the history)."""
MAX_MESSAGE_CHARS = 100_000
"""Most characters of one message; the question itself is bounded by ``MAX_QUESTION_CHARS``."""
MODEL_PREFIX = "ragloom-"
"""A mode ``fullqa`` is the model ``ragloom-fullqa``."""


class TextPart(BaseModel):
    """A text part of a message's content (the list form)."""

    type: Literal["text"]
    text: str = Field(max_length=MAX_MESSAGE_CHARS)


class ChatMessageIn(BaseModel):
    """One message of the conversation so far."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)] | list[TextPart] | None = None

    def text(self) -> str:
        """The message's text (the parts joined)."""
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(BaseModel):
    """``stream_options``: whether the last chunk carries the usage."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """A chat completion request; fields Ragloom does not use (temperature, max_tokens,
    ...) are accepted and ignored: the mode's settings decide."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(max_length=200, description="`ragloom-<mode>` (GET /v1/models).")
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None


class ModelOut(BaseModel):
    """A model: one reasoning mode."""

    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "ragloom"


class ModelList(BaseModel):
    """``GET /v1/models``."""

    object: Literal["list"] = "list"
    data: list[ModelOut]


class RagloomExtra(BaseModel):
    """Ragloom's extra field: the answer's mode, citations and grounding check."""

    mode: str
    citations: list[dict[str, Any]] = Field(
        description="Each: number, source (file), page, text (the chunk), chunk_id, start, "
        "end (its span in the file), highlight (the cited span within text)."
    )
    grounding: dict[str, Any] | None = None


class ChatCompletion(BaseModel):
    """A whole chat completion."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[dict[str, Any]]
    usage: dict[str, int]
    ragloom: RagloomExtra
