"""Texts the embedding backends' tests embed: scripts, emoji, an empty string, a long one."""

from __future__ import annotations

__all__ = ["SAMPLE_TEXTS"]

SAMPLE_TEXTS = [
    "A cat sits on the mat.",
    "Ragloom answers questions about your documents, offline, with citations to the page.",
    "",
    "短い日本語の文です。",
    "中文文本测试。你好！这是一个测试文件。",
    "café naïve résumé — Ünïcödé ½ ﬁ 😀",
    " ".join(["retrieval augmented generation splits documents into chunks"] * 40),
    "Short.",
    "The quarterly report shows revenue grew by 12% while costs stayed flat.",
    "def embed(texts): return model.encode(texts, normalize_embeddings=True)",
]
