"""Retrieval: vector, full-text and hybrid (reciprocal-rank fusion) retrievers, rerankers,
the definition prior."""

from ragloom.retrieval.base import FullTextRetriever, QueryEmbedder, Retriever, VectorRetriever
from ragloom.retrieval.definitions import DefinitionPrior
from ragloom.retrieval.focus import SentenceFocus
from ragloom.retrieval.hybrid import HybridRetriever, reciprocal_rank_fusion
from ragloom.retrieval.merge import RetrievalError, retrieve_from_all
from ragloom.retrieval.mmr import MMRReranker, mmr_order
from ragloom.retrieval.rerank import LLMReranker, Reranker, RerankingRetriever

__all__ = [
    "DefinitionPrior",
    "FullTextRetriever",
    "HybridRetriever",
    "LLMReranker",
    "MMRReranker",
    "QueryEmbedder",
    "Reranker",
    "RerankingRetriever",
    "RetrievalError",
    "Retriever",
    "SentenceFocus",
    "VectorRetriever",
    "mmr_order",
    "reciprocal_rank_fusion",
    "retrieve_from_all",
]
