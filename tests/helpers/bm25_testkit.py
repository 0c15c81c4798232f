"""What the BM25 store's tests share: a small corpus in three scripts, and probes of what
the store tokenizes and how often it loads its index."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import bm25s.stopwords
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


# Words of scripts that version 1 of the tokenizer cut at their combining marks or kept
# as one run: each chunk is found by its own word (written as a searcher may write it).
SCRIPTS = [
    chunk("hi-water", "नदी का पानी ठंडा है", "src-hi"),  # the river's water is cold
    chunk("hi-family", "पिता नाना और पति घर पर", "src-hi"),  # father, grandfather, husband
    chunk("hi-weather", "आज मौसम अच्छा है", "src-hi"),  # the weather is fine today
    chunk("ar-wrote", "كَتَبَ الطالبُ الدرسَ", "src-ar"),  # the student wrote the lesson
    chunk("ar-read", "قرأ المعلم الكتاب", "src-ar"),  # the teacher read the book
    chunk("th-lang", "ภาษาไทยเป็นภาษาราชการ", "src-th"),  # Thai is the official language
    chunk("tr-city", "İstanbul Boğazı", "src-tr"),  # the Bosphorus
]
SCRIPT_QUERIES = {"पानी": "hi-water", "كتب الطالب": "ar-wrote", "ภาษาไทย": "th-lang"}
SCRIPT_QUERIES["istanbul"] = "tr-city"


def tokenize_v1(text: str) -> list[str]:
    """What version 1 of the tokenizer gave for text without CJK: runs of ``\\w``, which
    leaves combining marks out (पानी -> प, न; كَتَبَ -> ك, ت, ب), Thai a run a term."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    return [w for w in words if w not in bm25s.stopwords.STOPWORDS_EN]


@contextmanager
def tokenizer_v1(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> Iterator[None]:
    """Within it, ``modules`` (those naming ``tokenize`` or ``TOKENIZER_VERSION``) write
    and read terms as version 1 of the tokenizer did."""
    with monkeypatch.context() as patch:
        for module in modules:
            if hasattr(module, "tokenize"):
                patch.setattr(module, "tokenize", tokenize_v1)
            if hasattr(module, "TOKENIZER_VERSION"):
                patch.setattr(module, "TOKENIZER_VERSION", 1)
        yield


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
