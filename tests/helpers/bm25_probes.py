"""Watching the BM25 store work: what it tokenizes, and how often it loads its index."""

from __future__ import annotations

from typing import Any

import pytest

from ragloom.stores import BM25Store, bm25, bm25_upgrade
from ragloom.stores.bm25_tokenize import tokenize


class LoadCounter:
    """Counts BM25Store._load calls (reading the whole index from SQLite), keeping them working."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = BM25Store._load

        def counting(store: BM25Store, *args: Any, **kwargs: Any) -> None:
            self.calls += 1
            original(store, *args, **kwargs)

        monkeypatch.setattr(BM25Store, "_load", counting)


class TokenizeCounter:
    """Counts the texts the store tokenizes (chunks and questions alike, upgrades too)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []

        def counting(text: str) -> list[str]:
            self.texts.append(text)
            return tokenize(text)

        for module in (bm25, bm25_upgrade):
            monkeypatch.setattr(module, "tokenize", counting)

    @property
    def calls(self) -> int:
        return len(self.texts)


def bump_tokenizer_version(monkeypatch: pytest.MonkeyPatch) -> int:
    """Make the store's tokenizer one version newer than the one it writes; return it."""
    newer = bm25.TOKENIZER_VERSION + 1
    for module in (bm25, bm25_upgrade):
        monkeypatch.setattr(module, "TOKENIZER_VERSION", newer)
    return newer
