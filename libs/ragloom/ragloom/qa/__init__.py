"""Question answering over retrieved evidence, with citations."""

from ragloom.qa.answer import CitedAnswerer
from ragloom.qa.citations import EvidenceBlock, build_evidence, cited_numbers

__all__ = ["CitedAnswerer", "EvidenceBlock", "build_evidence", "cited_numbers"]
