"""The file index: documents on disk, searched by vectors and by full text."""

from ragloom_app.index.file.index import FileIndex
from ragloom_app.index.file.pipeline import FileIndexingPipeline

__all__ = ["FileIndex", "FileIndexingPipeline"]
