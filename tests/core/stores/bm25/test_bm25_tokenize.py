"""BM25 terms: case folding, stopwords, width normalisation, CJK bigrams."""

from ragloom.stores.bm25 import tokenize
from ragloom.stores.bm25.tokenizer import query_terms


def test_tokenize_lowercases_and_drops_english_stopwords() -> None:
    assert tokenize("The Cat is ON the Mat, and it's NOT there!") == ["cat", "mat", "s"]


def test_tokenize_keeps_unicode_words_and_normalises_width() -> None:
    assert tokenize("Café Straße naïve ＧＰＵ x_y 42") == [
        "café",
        "strasse",
        "naïve",
        "gpu",
        "x_y",
        "42",
    ]


def test_tokenize_cjk_as_bigrams_and_lone_characters_as_unigrams() -> None:
    assert tokenize("向量数据库") == ["向量", "量数", "数据", "据库"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("GPU加速器 很快") == ["gpu", "加速", "速器", "很快"]
    # Japanese: kanji, kana and katakana runs have no spaces either.
    assert tokenize("東京テスト") == ["東京", "京テ", "テス", "スト"]
    assert tokenize("한국어 검색") == ["한국", "국어", "검색"]
    # Punctuation splits runs.
    assert tokenize("天气。好") == ["天气", "好"]


def test_tokenize_empty_and_symbols() -> None:
    assert tokenize("") == []
    assert tokenize("  ... !!! ---  ") == []
    assert tokenize("the of and") == []


# --- store ----------------------------------------------------------------------------------


def test_query_terms_keeps_each_term_once_in_order() -> None:
    # A question that repeats a word weighs it as one that says it once.
    assert query_terms("Taxes, taxes and the tax code") == ["taxes", "tax", "code"]
