"""Retrieval: vector, full-text and hybrid (reciprocal-rank fusion) retrievers."""

from ragloom.retrieval.base import FullTextRetriever, QueryEmbedder, Retriever, VectorRetriever
from ragloom.retrieval.hybrid import HybridRetriever, reciprocal_rank_fusion

__all__ = [
    "FullTextRetriever",
    "HybridRetriever",
    "QueryEmbedder",
    "Retriever",
    "VectorRetriever",
    "reciprocal_rank_fusion",
]
