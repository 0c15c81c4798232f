"""Splitting pages of text into chunks small enough to embed."""

from ragloom.splitters.token import (
    TokenCounter,
    TokenSplitter,
    approximate_token_count,
    sentence_spans,
)

__all__ = ["TokenCounter", "TokenSplitter", "approximate_token_count", "sentence_spans"]
