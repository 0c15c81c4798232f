"""Question answering over retrieved evidence, with citations."""

from ragloom.qa.answer import CitedAnswerer, stream_cited_answer
from ragloom.qa.citations import EvidenceBlock, build_evidence, cited_numbers
from ragloom.qa.grounding import GroundingCheck, check_grounding, ground_answer

__all__ = [
    "CitedAnswerer",
    "EvidenceBlock",
    "GroundingCheck",
    "build_evidence",
    "check_grounding",
    "cited_numbers",
    "ground_answer",
    "stream_cited_answer",
]
