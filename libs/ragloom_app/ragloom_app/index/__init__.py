"""Indices: where documents live. Each index type is a :class:`BaseIndex` plugin."""

from ragloom_app.index.base import (
    BaseIndex,
    FileOutcome,
    IndexingPipeline,
    IndexingProgress,
    IndexResources,
)
from ragloom_app.index.manager import IndexManager

__all__ = [
    "BaseIndex",
    "FileOutcome",
    "IndexManager",
    "IndexResources",
    "IndexingPipeline",
    "IndexingProgress",
]
