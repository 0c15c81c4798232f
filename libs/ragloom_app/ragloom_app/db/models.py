"""Tables of the app database."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, Index, func, text
from sqlmodel import Field, SQLModel

__all__ = [
    "LOCAL_USER",
    "ApiKeyRecord",
    "ChunkRecord",
    "Conversation",
    "IndexRecord",
    "IndexingJob",
    "JobStatus",
    "LoginFailure",
    "MessageRecord",
    "SessionRecord",
    "Source",
    "SourceStatus",
    "UserRecord",
]

LOCAL_USER = "local"
"""The owner of everything made without login (the single user of a laptop)."""


def _now() -> datetime:
    return datetime.now(UTC)


class IndexRecord(SQLModel, table=True):
    """An index: a named collection of sources, of one index type."""

    __tablename__ = "indices"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    index_type: str
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=_now)
    # The user who made it; a shared index is read by every user, written by its owner
    # and admins. The indices of before accounts are the local user's, shared.
    owner: str = Field(default=LOCAL_USER, index=True)
    shared: bool = True
    # The name of its collections in stores that hold many indices (a Chroma server may
    # hold several deployments'); None for indices made before it, named by their id.
    store_name: str | None = None
    # While an import fills it: the import's hold (``host:pid:start:hold``, see
    # ragloom_app.conversation_holds), which every data folder's processes see; None
    # otherwise. Left set by an import killed outright: the index is half made.
    importing_by: str | None = None


class SourceStatus(StrEnum):
    """Where a source stands: it counts as indexed only when every store has its chunks.

    ``removing`` marks a source whose removal has begun, so a crash halfway through is
    finished at the next start instead of leaving chunks of a removed file in a store.
    """

    QUEUED = "queued"
    INDEXING = "indexing"
    INDEXED = "indexed"
    FAILED = "failed"
    REMOVING = "removing"


class Source(SQLModel, table=True):
    """A file added to an index.

    ``attempts`` counts the times its indexing started (committed before any reading),
    since it was added or last indexed again from ``indexed``; a source a crash keeps
    interrupting is failed once it reaches ``recovery.MAX_INDEXING_ATTEMPTS`` instead of
    being indexed again at every start.
    """

    __tablename__ = "sources"

    id: str = Field(primary_key=True)
    index_id: int = Field(foreign_key="indices.id", index=True)
    name: str
    sha256: str = Field(index=True)
    size: int = 0
    owner: str = "local"
    status: SourceStatus = SourceStatus.QUEUED
    reason: str | None = None
    chunk_count: int = 0
    stored_path: str | None = None
    attempts: int = 0
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)


class ChunkRecord(SQLModel, table=True):
    """A chunk of a source, as the vector and full-text stores hold it too."""

    __tablename__ = "chunks"

    id: str = Field(primary_key=True)
    source_id: str = Field(foreign_key="sources.id", index=True)
    index_id: int = Field(index=True)
    page: int | None = None
    start: int = 0
    end: int = 0
    text: str


class Conversation(SQLModel, table=True):
    """A chat conversation."""

    __tablename__ = "conversations"

    id: str = Field(primary_key=True)
    title: str = "New conversation"
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)
    owner: str = Field(default=LOCAL_USER, index=True)
    # While an answer is being written in it: until when at most (the answer's deadline),
    # so that one of a process that died lapses. NULL when none is.
    answering_until: datetime | None = None
    # Which process holds it then ("host:pid"), so that a dead one's hold is taken over.
    answering_by: str | None = None


class MessageRecord(SQLModel, table=True):
    """One message of a conversation; an assistant message keeps its mode and citations."""

    __tablename__ = "messages"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str = Field(foreign_key="conversations.id", index=True)
    role: str
    content: str
    mode: str | None = None
    citations: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    # The grounding check's report (GroundingReport.to_dict); NULL when none ran.
    grounding: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=_now)


class UserRecord(SQLModel, table=True):
    """An account. ``password_hash`` is an argon2id hash (accounts.passwords), never the
    password; a disabled user cannot log in and its sessions and keys stop working."""

    __tablename__ = "users"
    # Names that differ in case alone would look like one user wherever shown: the store
    # refuses them, and this index does when two are added at the same moment.
    __table_args__ = (Index("ux_users_name_folded", func.lower(text("name")), unique=True),)

    id: str = Field(primary_key=True)
    name: str = Field(index=True, unique=True)
    password_hash: str
    is_admin: bool = False
    disabled: bool = False
    created_at: datetime = Field(default_factory=_now)


class SessionRecord(SQLModel, table=True):
    """A login session: the SHA-256 of its cookie's token (the token is never stored)."""

    __tablename__ = "sessions"

    token_hash: str = Field(primary_key=True)
    user_id: str = Field(foreign_key="users.id", index=True)
    created_at: datetime = Field(default_factory=_now)
    expires_at: datetime


class LoginFailure(SQLModel, table=True):
    """One failed login, counted against an account or a client address (``scope``) for
    the login limits' window (accounts.ratelimit), whichever app process saw it."""

    __tablename__ = "login_failures"

    id: int | None = Field(default=None, primary_key=True)
    scope: str
    key: str = Field(index=True)
    at: datetime = Field(default_factory=_now, index=True)


class ApiKeyRecord(SQLModel, table=True):
    """An API key: its SHA-256 (the key is shown once, never stored) and its first
    characters, so a list can tell keys apart."""

    __tablename__ = "api_keys"

    id: str = Field(primary_key=True)
    user_id: str = Field(foreign_key="users.id", index=True)
    name: str
    key_hash: str = Field(index=True, unique=True)
    prefix: str
    created_at: datetime = Field(default_factory=_now)
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None


class UserSettingsRecord(SQLModel, table=True):
    """What a user saved as its chat defaults (``accounts.preferences.ChatDefaults``, as
    JSON); the local user has one too."""

    __tablename__ = "user_settings"

    user_id: str = Field(primary_key=True)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    updated_at: datetime = Field(default_factory=_now)


class JobStatus(StrEnum):
    """Where an indexing job stands. ``done``, ``failed`` and ``cancelled`` are final.

    A job is ``done`` when every file has an outcome, whatever each outcome is (a file that
    could not be indexed is reported, not the job failed); ``failed`` means the job itself
    could not run (its index deleted, its staged files gone).
    """

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class IndexingJob(SQLModel, table=True):
    """Files to index into one index, run by a worker (:mod:`ragloom_app.jobs`).

    ``files`` lists the staged uploads (``{"name", "path"}``, in the job's staging folder)
    or, for ``kind`` ``reindex``, the source ids to index again. ``outcomes`` holds one
    entry per file once it is done. ``heartbeat_at`` is renewed while a worker runs the
    job: a ``running`` job whose heartbeat is older than the stall timeout lost its worker
    and is taken again; such a job queued again has its heartbeat set to that moment, so
    a ``queued`` job waits from ``heartbeat_at`` or, if it never ran, ``created_at``.
    """

    __tablename__ = "indexing_jobs"

    id: str = Field(primary_key=True)
    index_id: int = Field(index=True)
    owner: str = Field(default=LOCAL_USER, index=True)
    kind: str = "add"
    status: JobStatus = Field(default=JobStatus.QUEUED, index=True)
    files: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    outcomes: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    files_total: int = 0
    files_done: int = 0
    fraction: float = 0.0
    current: str | None = None
    error: str | None = None
    cancel_requested: bool = False
    worker: str | None = None
    attempts: int = 0
    created_at: datetime = Field(default_factory=_now)
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    finished_at: datetime | None = None
