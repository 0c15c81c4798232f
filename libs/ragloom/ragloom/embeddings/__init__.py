"""Embedding models: text in, unit-length float32 vectors out."""

from ragloom.embeddings.base import Embeddings, EmbeddingsError
from ragloom.embeddings.bundled import bundled_model_path
from ragloom.embeddings.sentence_transformer import (
    Backend,
    Precision,
    SentenceTransformerEmbeddings,
)

__all__ = [
    "Backend",
    "Embeddings",
    "EmbeddingsError",
    "Precision",
    "SentenceTransformerEmbeddings",
    "bundled_model_path",
]
