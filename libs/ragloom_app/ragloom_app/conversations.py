"""Conversations and their messages, kept in the app database across restarts.

Messages are typed in and typed out (:class:`StoredMessage`, its citations
:class:`~ragloom.events.Citation`); the database holds their JSON form. A citation row
that an earlier version wrote reads back with the fields added since at their defaults;
one that cannot be read at all is left out of its message (and logged), not the whole
conversation. So with an answer's grounding report: one that cannot be read is dropped
(the answer shows unmarked), and an answer stored before reports were kept has none.

One answer is written in a conversation at a time (:meth:`ConversationStore.answering`),
whichever process writes it: a second question waits its turn instead of being stored
between the first one and its answer.
"""

from __future__ import annotations

import builtins
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select, update

from ragloom.events import Citation
from ragloom.grounding_report import GroundingReport
from ragloom.storable import storable_text
from ragloom_app.conversation_holds import is_stale, live_hold
from ragloom_app.db.models import LOCAL_USER, Conversation, MessageRecord
from ragloom_app.errors import UserFacingError

__all__ = [
    "ConversationBusyError",
    "ConversationStore",
    "StoredMessage",
    "UnknownConversationError",
]

logger = logging.getLogger(__name__)


class UnknownConversationError(UserFacingError, KeyError):
    """No conversation of this user has that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown conversation"


class ConversationBusyError(UserFacingError):
    """An answer is being written in the conversation: a question waits for it to end."""


@dataclass(frozen=True)
class StoredMessage:
    """One message of a conversation: who wrote it, its text, and for an answer the mode
    that wrote it, what it cites and its grounding check (``None``: none ran, or the
    answer was stored before reports were kept)."""

    role: str
    content: str
    mode: str | None = None
    citations: list[Citation] = field(default_factory=list)
    grounding: GroundingReport | None = None


def _citations(rows: Iterable[Any], message_id: int | None) -> list[Citation]:
    """The stored citations of a message; rows that are no citation are left out."""
    citations = []
    for row in rows:
        try:
            if not isinstance(row, Mapping):
                raise ValueError(f"a stored citation is a {type(row).__name__}, not an object")
            citations.append(Citation.from_dict(row))
        except (TypeError, ValueError) as exc:
            logger.warning("message %s: a citation left out: %s", message_id, exc)
    return citations


def _grounding(data: Any, message_id: int | None) -> GroundingReport | None:
    """The stored grounding report of a message, or ``None`` if it has none or it
    cannot be read (logged)."""
    if data is None:
        return None
    try:
        return GroundingReport.from_dict(data)
    except (TypeError, ValueError) as exc:
        logger.warning("message %s: its grounding report left out: %s", message_id, exc)
        return None


def _summary(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": conversation.id,
        "title": conversation.title,
        "updated_at": conversation.updated_at,
    }


class ConversationStore:
    """Create conversations, append messages and read them back.

    Every conversation has an owner (the local user's, without accounts): listing,
    getting, renaming and deleting take the owner, and another user's conversation is as
    if it did not exist."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, title: str = "New conversation", owner: str = LOCAL_USER) -> str:
        """A new empty conversation of ``owner``; returns its id."""
        conversation_id = uuid.uuid4().hex
        with Session(self.engine) as session:
            title = storable_text(title)[:80]
            session.add(Conversation(id=conversation_id, title=title, owner=owner))
            session.commit()
        return conversation_id

    def list(
        self,
        owner: str = LOCAL_USER,
        *,
        search: str = "",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """``owner``'s conversations, the last changed first: those whose title holds
        ``search`` (any case; ``%`` and ``_`` are just characters), at most ``limit`` of
        them after the first ``offset``."""
        query = select(Conversation).where(Conversation.owner == owner)
        if search:
            escaped = search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            query = query.where(func.lower(Conversation.title).like(f"%{escaped}%", escape="\\"))
        query = query.order_by(col(Conversation.updated_at).desc(), col(Conversation.id))
        query = query.offset(max(0, offset))
        if limit is not None:
            query = query.limit(max(0, limit))
        with Session(self.engine) as session:
            return [_summary(c) for c in session.exec(query)]

    @staticmethod
    def _owned(session: Session, conversation_id: str, owner: str) -> Conversation | None:
        conversation = session.get(Conversation, conversation_id)
        return conversation if conversation is not None and conversation.owner == owner else None

    def get(self, conversation_id: str, owner: str = LOCAL_USER) -> dict[str, Any] | None:
        """``owner``'s conversation's id, title and last change, or ``None`` if it has none
        of that id."""
        with Session(self.engine) as session:
            conversation = self._owned(session, conversation_id, owner)
            return None if conversation is None else _summary(conversation)

    def rename(self, conversation_id: str, title: str, owner: str = LOCAL_USER) -> bool:
        """Give a conversation a title (at most 80 characters); ``False`` if there is none."""
        with Session(self.engine) as session:
            conversation = self._owned(session, conversation_id, owner)
            if conversation is None:
                return False
            conversation.title = storable_text(title).strip()[:80] or conversation.title
            conversation.updated_at = datetime.now(UTC)
            session.add(conversation)
            session.commit()
            return True

    def delete(self, conversation_id: str, owner: str = LOCAL_USER) -> bool:
        """Delete a conversation and its messages; ``False`` if there is none."""
        with Session(self.engine) as session:
            conversation = self._owned(session, conversation_id, owner)
            if conversation is None:
                return False
            for message in session.exec(
                select(MessageRecord).where(MessageRecord.conversation_id == conversation_id)
            ):
                session.delete(message)
            # No relationship tells the session the messages go first; the foreign key
            # refuses the conversation's row while they are there.
            session.flush()
            session.delete(conversation)
            session.commit()
            return True

    def delete_all(self, owner: str) -> int:
        """Delete every conversation of ``owner`` and their messages; how many there were."""
        with Session(self.engine) as session:
            ids = list(session.exec(select(Conversation.id).where(Conversation.owner == owner)))
            if not ids:
                return 0
            for message in session.exec(
                select(MessageRecord).where(col(MessageRecord.conversation_id).in_(ids))
            ):
                session.delete(message)
            session.flush()  # the messages first: their foreign key refuses it otherwise
            for conversation in session.exec(
                select(Conversation).where(col(Conversation.id).in_(ids))
            ):
                session.delete(conversation)
            session.commit()
            return len(ids)

    def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        *,
        mode: str | None = None,
        citations: builtins.list[Citation] | None = None,
        grounding: GroundingReport | None = None,
    ) -> None:
        """Append a message; the first user message also names the conversation."""
        content = storable_text(content)
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
                    citations=[c.to_dict() for c in citations or []],
                    grounding=grounding.to_dict() if grounding is not None else None,
                )
            )
            if role == "user" and conversation.title == "New conversation":
                lines = content.strip().splitlines()
                conversation.title = (lines[0][:80] if lines else "") or conversation.title
            conversation.updated_at = datetime.now(UTC)
            session.add(conversation)
            session.commit()

    @contextmanager
    def answering(self, conversation_id: str, owner: str, seconds: float) -> Iterator[None]:
        """Hold ``owner``'s conversation while an answer is written in it, for at most
        ``seconds`` (then a hold of a process that died lapses by itself).

        :class:`ConversationBusyError` if another answer holds it,
        :class:`UnknownConversationError` if ``owner`` has no such conversation. Every
        process sees the hold: it is the conversation's row, taken by one conditional
        update. A left-over hold (its process died on this machine, or its release failed)
        is taken over at once (:mod:`ragloom_app.conversation_holds`).
        """
        now = datetime.now(UTC)
        # The hold's own mark: its release clears this hold only, not one taken after it
        # lapsed (an answer that outlived it must not free the conversation under another).
        until = now + timedelta(seconds=seconds)
        free = or_(
            col(Conversation.answering_until).is_(None), col(Conversation.answering_until) < now
        )
        # Live before it is written, released after: no moment when another answer of this
        # process could take it for a left-over one.
        with live_hold() as me:
            if not self._hold(conversation_id, [col(Conversation.owner) == owner, free], until, me):
                held = self._holding(conversation_id, owner)
                # A left-over hold (a dead process's, or a release that failed) is taken
                # over at once, and one given back between the two looks is taken as it is.
                if not (
                    (held.answering_until is None or is_stale(held.answering_by))
                    and self._hold(
                        conversation_id,
                        [
                            col(Conversation.answering_by) == held.answering_by,
                            col(Conversation.answering_until) == held.answering_until,
                        ],
                        until,
                        me,
                    )
                ):
                    raise ConversationBusyError(
                        "an answer is being written in this conversation: ask again once "
                        "it ends (or stop it)"
                    )
            try:
                yield
            finally:
                with Session(self.engine) as session:
                    session.exec(
                        update(Conversation)
                        .where(
                            col(Conversation.id) == conversation_id,
                            col(Conversation.answering_until) == until,
                        )
                        .values(answering_until=None, answering_by=None)
                    )
                    session.commit()

    def _hold(
        self, conversation_id: str, conditions: builtins.list[Any], until: datetime, me: str
    ) -> bool:
        """Whether this process took the hold of ``conversation_id`` (the row met every
        one of ``conditions``)."""
        with Session(self.engine) as session:
            taken = session.exec(
                update(Conversation)
                .where(col(Conversation.id) == conversation_id, *conditions)
                .values(answering_until=until, answering_by=me)
            )
            session.commit()
        return bool(taken.rowcount == 1)

    def _holding(self, conversation_id: str, owner: str) -> Conversation:
        """``owner``'s conversation as it is held; :class:`UnknownConversationError` if
        there is none."""
        with Session(self.engine) as session:
            conversation = self._owned(session, conversation_id, owner)
            if conversation is None:
                raise UnknownConversationError(f"no conversation {conversation_id!r}")
            session.expunge(conversation)
            return conversation

    # ``list`` is a method here: the builtin is named in full.
    def messages(self, conversation_id: str) -> builtins.list[StoredMessage]:
        """The messages of a conversation, oldest first."""
        with Session(self.engine) as session:
            rows = session.exec(
                select(MessageRecord)
                .where(MessageRecord.conversation_id == conversation_id)
                .order_by(col(MessageRecord.id))
            )
            return [
                StoredMessage(
                    m.role,
                    m.content,
                    m.mode,
                    _citations(m.citations or [], m.id),
                    _grounding(m.grounding, m.id),
                )
                for m in rows
            ]
