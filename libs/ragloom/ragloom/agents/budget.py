"""Keeping text inside a token budget, so every prompt fits the model's context."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["trim_to_tokens"]


def trim_to_tokens(text: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """``text`` cut at a word boundary to at most ``max_tokens``, marked with "…" if cut."""
    if count_tokens(text) <= max_tokens:
        return text
    words = text.split()
    low, high = 0, len(words)
    while low < high:  # binary search for the longest prefix of words that fits
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle]) + " …") <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return (" ".join(words[:low]) + " …").lstrip()
