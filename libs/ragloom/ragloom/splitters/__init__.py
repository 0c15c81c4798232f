"""Splitting pages of text into chunks small enough to embed."""

from ragloom.splitters.token import TokenCounter, TokenSplitter, approximate_token_count

__all__ = ["TokenCounter", "TokenSplitter", "approximate_token_count"]
