"""The request and response shapes of the OpenAI-compatible endpoint (``/v1``): the
fields of OpenAI's Chat Completions that Ragloom reads or fills, and ``ragloom``, the
documented extra field that carries citations (standard clients ignore it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
MAX_PARTS = 1000
"""Most parts of one message's content in the list form."""
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
    content: (
        Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]
        | Annotated[list[TextPart], Field(max_length=MAX_PARTS)]
        | None
    ) = None

    @model_validator(mode="after")
    def _bounded(self) -> ChatMessageIn:
        # The list form is held to the string form's bound: parts add up.
        if isinstance(self.content, list) and len(self.text()) > MAX_MESSAGE_CHARS:
            raise ValueError(f"a message holds at most {MAX_MESSAGE_CHARS} characters")
        return self

    def text(self) -> str:
        """The message's text (the parts joined)."""
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(BaseModel):
    """``stream_options``: whether the last chunk carries the usage."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ResponseFormat(BaseModel):
    """``response_format``: an answer is text with citations, never JSON."""

    model_config = ConfigDict(extra="allow")

    type: Literal["text"]


class ChatCompletionRequest(BaseModel):
    """A chat completion request. Fields that only tune the generation (temperature,
    max_tokens, top_p, stop, seed...) are accepted and ignored: the mode's settings
    decide. Those that ask for a response of another shape are refused, since the
    answer could not have it: several choices (``n``), tool or function calls (``tools``,
    ``tool_choice`` other than "none", ``functions``, ``function_call``), JSON
    (``response_format``), log probabilities (``logprobs``, ``top_logprobs``), audio
    (``modalities`` holding "audio", ``audio``)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(max_length=200, description="`ragloom-<mode>` (GET /v1/models).")
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = Field(None, ge=1, le=1, description="Only 1: one answer per question.")
    tools: list[Any] | None = Field(
        None, max_length=0, description="None: the modes call Ragloom's own tools."
    )
    tool_choice: Literal["none"] | None = Field(None, description="Only none: no tools.")
    functions: list[Any] | None = Field(
        None, max_length=0, description="None: tools' older form, refused as tools are."
    )
    function_call: Literal["none"] | None = Field(None, description="Only none: no tools.")
    response_format: ResponseFormat | None = None
    logprobs: Literal[False] | None = None
    top_logprobs: int | None = Field(None, ge=0, le=0, description="Only 0: no log probabilities.")
    modalities: list[Literal["text"]] | None = Field(None, description="Only text.")
    audio: None = Field(None, description="None: an answer is text.")


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
