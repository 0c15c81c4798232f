"""The app database (sqlmodel): indices, their sources and chunks, and conversations."""

from ragloom_app.db.engine import create_db_engine
from ragloom_app.db.models import (
    ChunkRecord,
    Conversation,
    IndexRecord,
    MessageRecord,
    Source,
    SourceStatus,
)

__all__ = [
    "ChunkRecord",
    "Conversation",
    "IndexRecord",
    "MessageRecord",
    "Source",
    "SourceStatus",
    "create_db_engine",
]
