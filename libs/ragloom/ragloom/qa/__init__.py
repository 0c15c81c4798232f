"""Question answering over retrieved evidence, with citations."""

from ragloom.qa.answer import CitedAnswerer, stream_cited_answer
from ragloom.qa.citations import EvidenceBlock, build_evidence, cited_numbers

__all__ = [
    "CitedAnswerer",
    "EvidenceBlock",
    "build_evidence",
    "cited_numbers",
    "stream_cited_answer",
]
