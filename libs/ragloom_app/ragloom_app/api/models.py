"""The typed requests and responses of the HTTP API (pydantic: they make the OpenAPI
document). Bounds are the app's own: a question past ``MAX_QUESTION_CHARS`` is refused by
the chat page in its words; the fields here bound what a body may hold at all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AnswerOut",
    "AskRequest",
    "CitationOut",
    "ConversationCreate",
    "ConversationDetail",
    "ConversationOut",
    "ConversationRename",
    "ErrorOut",
    "FileOut",
    "HealthOut",
    "IndexOut",
    "IndexSettingsOut",
    "MessageOut",
    "ModeOut",
    "UsageOut",
    "VersionOut",
    "file_out",
]

MAX_TITLE_CHARS = 80
"""The longest conversation title (the database's)."""
MAX_BODY_QUESTION_CHARS = 100_000
"""What a body's question may hold at all; the app's own limit (``MAX_QUESTION_CHARS``,
4,000 by default) refuses a long one in words before anything is saved."""
MAX_SETTINGS = 64
"""Most mode or index settings one request may give."""


class _Strict(BaseModel):
    # A key the API does not know is a mistake worth saying, not something to ignore.
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(BaseModel):
    """What went wrong: a stable code, words for people, and where in the request."""

    code: str = Field(description="not_found, invalid_request, model_not_found, ...")
    message: str
    type: str = Field(
        description="OpenAI's kind of error: invalid_request_error, authentication_error, "
        "permission_error, not_found_error, rate_limit_error, unavailable_error, server_error."
    )
    param: str | None = Field(
        description="The request field at fault (OpenAI's way: messages[0].content), if one is."
    )
    details: list[dict[str, Any]] | None = Field(
        None, description="For a request the API cannot take: where (loc) and what (msg)."
    )


class ErrorOut(BaseModel):
    """Every error response."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "Log in, or send an API key.", "model": ErrorOut},
    404: {"description": "No such object.", "model": ErrorOut},
    413: {"description": "The body is larger than MAX_REQUEST_BYTES.", "model": ErrorOut},
    422: {"description": "The request is not valid.", "model": ErrorOut},
    429: {"description": "Busy, or too many failed logins: try again.", "model": ErrorOut},
}
"""The error responses every route may give (its OpenAPI entry)."""


class HealthOut(BaseModel):
    """The server answers."""

    status: Literal["ok"] = "ok"


class VersionOut(BaseModel):
    """What is serving."""

    name: Literal["ragloom"] = "ragloom"
    version: str


class ModeOut(BaseModel):
    """A reasoning mode and its settings."""

    id: str = Field(description="What `mode` takes in an ask, e.g. `fullqa`.")
    name: str
    description: str
    settings_schema: dict[str, Any] = Field(
        description="A JSON Schema of the mode's settings (an object; each with its default)."
    )


class IndexOut(BaseModel):
    """An index the client may search."""

    name: str
    type: str
    files: int = Field(description="Files in the index, whatever their state.")
    owner: str = Field(description="Its owner's name (`local` without accounts).")
    shared: bool = Field(description="Every user reads it; else only its owner.")


class FileOut(BaseModel):
    """A file of an index and its indexing state."""

    id: str
    name: str
    status: str = Field(description="indexed, queued, indexing, failed or removed.")
    reason: str | None = Field(None, description="Why it failed, or when it is retried.")
    chunks: int
    size: int


def file_out(entry: Mapping[str, Any]) -> FileOut:
    """A file as ``BaseIndex.list_sources`` lists it, as the API shows it."""
    return FileOut(
        id=str(entry["id"]),
        name=entry["name"],
        status=entry["status"],
        reason=entry.get("reason") or None,
        chunks=entry.get("chunks") or 0,
        size=entry.get("size") or 0,
    )


class IndexSettingsOut(BaseModel):
    """How an index was made, and what a request may set of how it searches."""

    name: str
    config: dict[str, Any] = Field(
        description="Its settings as made (chunking, file types...); fixed once it has files."
    )
    search_settings_schema: dict[str, Any] = Field(
        description="A JSON Schema of the settings an ask may give for it (`index_settings`)."
    )


class ConversationCreate(_Strict):
    """A new conversation."""

    title: str = Field("New conversation", min_length=1, max_length=MAX_TITLE_CHARS)


class ConversationRename(_Strict):
    """A conversation's new title."""

    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)


class ConversationOut(BaseModel):
    """A conversation, without its messages."""

    id: str
    title: str
    updated_at: str = Field(description="ISO 8601, UTC.")


class CitationOut(BaseModel):
    """A passage an answer cites, as ``[number]`` in its text."""

    number: int
    source: str = Field(description="The file's name.")
    page: int | None
    text: str = Field(description="The whole chunk cited.")
    chunk_id: str
    score: float
    start: int = Field(description="Where the chunk starts in the file's text.")
    end: int
    found_by: dict[str, float] = Field(description="Each retriever's score of it.")
    highlight: list[int] | None = Field(
        None, description="[start, end] of the cited span within `text`, when known."
    )


class MessageOut(BaseModel):
    """One turn of a conversation."""

    role: Literal["user", "assistant"]
    content: str
    mode: str | None = None
    citations: list[CitationOut] = []
    grounding: dict[str, Any] | None = None


class ConversationDetail(ConversationOut):
    """A conversation with its messages, oldest first."""

    messages: list[MessageOut]


class AskRequest(_Strict):
    """A question to answer in a conversation."""

    question: str = Field(min_length=1, max_length=MAX_BODY_QUESTION_CHARS)
    mode: str | None = Field(
        None, description="A mode's id (GET /api/v1/modes); default: the app's."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict,
        max_length=MAX_SETTINGS,
        description="The mode's settings to change (its settings_schema); the rest keep defaults.",
    )
    indices: list[str] | None = Field(
        None, max_length=MAX_SETTINGS, description="Search only these indices (default: all)."
    )
    index_settings: dict[str, Annotated[dict[str, Any], Field(max_length=MAX_SETTINGS)]] = Field(
        default_factory=dict,
        max_length=MAX_SETTINGS,
        description="How an index searches for this question, by index name: its settings "
        "to change (GET /api/v1/indices/{name}/settings, search_settings_schema).",
    )
    stream: bool = Field(
        False, description="Answer as server-sent events (text/event-stream), not one object."
    )


class UsageOut(BaseModel):
    """What the answer cost."""

    prompt_tokens: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    llm_calls: int
    seconds: float


class AnswerOut(BaseModel):
    """A whole answer: the shape ``ragloom ask --json`` prints, with its conversation."""

    conversation_id: str
    answer: str
    mode: str
    citations: list[CitationOut]
    steps: list[dict[str, Any]] = Field(description="The steps' events, in order.")
    usage: UsageOut
    precheck: dict[str, Any] | None
    grounding: dict[str, Any] | None = Field(
        description="Per sentence: supported or not, and by which passages."
    )
