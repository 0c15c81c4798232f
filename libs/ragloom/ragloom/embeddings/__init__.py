"""Embedding models: text in, unit-length float32 vectors out."""

from ragloom.embeddings.base import Embeddings, EmbeddingsError
from ragloom.embeddings.bundled import bundled_model_path
from ragloom.embeddings.openai_compat import OpenAIEmbeddings
from ragloom.embeddings.sentence_transformer import (
    Backend,
    Precision,
    SentenceTransformerEmbeddings,
)
from ragloom.embeddings.token_counter import TokenizerCounter

__all__ = [
    "Backend",
    "Embeddings",
    "EmbeddingsError",
    "OpenAIEmbeddings",
    "Precision",
    "SentenceTransformerEmbeddings",
    "TokenizerCounter",
    "bundled_model_path",
]
