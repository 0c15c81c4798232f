"""What the BM25 store's tests share: a small corpus in three scripts, and probes of what
the store tokenizes and how often it loads its index."""

from __future__ import annotations

from typing import Any

import pytest

from ragloom.schema import Chunk
from ragloom.stores import BM25Store
from ragloom.stores.bm25 import store as bm25_store
from ragloom.stores.bm25 import tokenizer as bm25_tokenizer
from ragloom.stores.bm25 import upgrade as bm25_upgrade
from ragloom.stores.bm25.tokenizer import tokenize


def chunk(chunk_id: str, text: str, source_id: str = "src-a", page: int | None = None) -> Chunk:
    return Chunk(
        id=chunk_id,
        text=text,
        source_id=source_id,
        source_name=f"{source_id}.txt",
        page=page,
        start=3,
        end=3 + len(text),
    )


CORPUS = [
    chunk("en-1", "The cat sat on the warm mat near the window.", page=1),
    chunk("en-2", "Dogs chase cats; a cat runs up the tree.", page=2),
    chunk("en-3", "Quarterly revenue grew eight percent on strong cloud sales."),
    chunk("en-4", "The invoice lists revenue and tax for the cloud contract.", "src-b"),
    chunk("zh-1", "向量数据库支持相似度检索，适合语义搜索。", "src-zh"),
    chunk("zh-2", "今天的天气很好，我们去公园散步。", "src-zh"),
    chunk("ja-1", "東京の天気は晴れです。テストを実行します。", "src-ja"),
]


def ids_of(hits: list[tuple[Chunk, float]]) -> list[str]:
    return [c.id for c, _ in hits]


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

        # The tokenizer's own name too: query_terms calls it there.
        for module in (bm25_store, bm25_upgrade, bm25_tokenizer):
            monkeypatch.setattr(module, "tokenize", counting)

    @property
    def calls(self) -> int:
        return len(self.texts)


def bump_tokenizer_version(monkeypatch: pytest.MonkeyPatch) -> int:
    """Make the store's tokenizer one version newer than the one it writes; return it."""
    newer = bm25_store.TOKENIZER_VERSION + 1
    for module in (bm25_store, bm25_upgrade):
        monkeypatch.setattr(module, "TOKENIZER_VERSION", newer)
    return newer
