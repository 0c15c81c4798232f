"""Conversations and their messages, kept in the app database across restarts."""

from __future__ import annotations

import builtins
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom.events import Citation
from ragloom_app.db.models import Conversation, MessageRecord

__all__ = ["ConversationStore"]


class ConversationStore:
    """Create conversations, append messages and read them back."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, title: str = "New conversation") -> str:
        """A new empty conversation; returns its id."""
        conversation_id = uuid.uuid4().hex
        with Session(self.engine) as session:
            session.add(Conversation(id=conversation_id, title=title[:80]))
            session.commit()
        return conversation_id

    def list(self) -> list[dict[str, Any]]:
        """Every conversation, newest first."""
        with Session(self.engine) as session:
            rows = session.exec(select(Conversation).order_by(col(Conversation.updated_at).desc()))
            return [{"id": c.id, "title": c.title, "updated_at": c.updated_at} for c in rows]

    def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        *,
        mode: str | None = None,
        citations: builtins.list[Citation] | None = None,  # `list` is a method here
    ) -> None:
        """Append a message; the first user message also names the conversation."""
        with Session(self.engine) as session:
            conversation = session.get(Conversation, conversation_id)
            if conversation is None:
                raise KeyError(f"no conversation {conversation_id!r}")
            session.add(
                MessageRecord(
                    conversation_id=conversation_id,
                    role=role,
                    content=content,
                    mode=mode,
                    citations=[asdict(c) for c in citations or []],
                )
            )
            if role == "user" and conversation.title == "New conversation":
                conversation.title = content.strip().splitlines()[0][:80] or conversation.title
            conversation.updated_at = datetime.now(UTC)
            session.add(conversation)
            session.commit()

    def messages(self, conversation_id: str) -> builtins.list[dict[str, Any]]:
        """The messages of a conversation, oldest first."""
        with Session(self.engine) as session:
            rows = session.exec(
                select(MessageRecord)
                .where(MessageRecord.conversation_id == conversation_id)
                .order_by(col(MessageRecord.id))
            )
            return [
                {
                    "role": m.role,
                    "content": m.content,
                    "mode": m.mode,
                    "citations": list(m.citations or []),
                }
                for m in rows
            ]
