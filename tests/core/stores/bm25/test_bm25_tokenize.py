"""BM25 terms: case folding, stopwords, width normalisation, combining marks, bigrams of
the scripts written without spaces."""

import re
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from ragloom.stores.bm25 import tokenize
from ragloom.stores.bm25.tokenizer import query_terms
from ragloom.words import combining_marks


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


def test_tokenize_keeps_the_combining_marks_of_a_word() -> None:
    # Devanagari vowel signs and the virama are marks (Mn, Mc), which \w leaves out.
    assert tokenize("नदी का पानी ठंडा है") == ["नदी", "का", "पानी", "ठंडा", "है"]
    assert tokenize("हिन्दी") == ["हिन्दी"]
    # They make other words: husband, father, address (all "प", "त" without their marks).
    assert len({tuple(tokenize(word)) for word in ("पति", "पिता", "पता")}) == 3
    assert tokenize("নদীর পানি") == ["নদীর", "পানি"]
    assert tokenize("தமிழ் மொழி") == ["தமிழ்", "மொழி"]
    # A mark with no letter before it is no word; Latin is composed by NFKC.
    assert tokenize("\u0301 e\u0301te\u0301") == ["été"]


def test_tokenize_drops_the_marks_writers_leave_out() -> None:
    # Arabic vowel marks (harakat) and tatweel: the same words, written either way.
    assert (
        tokenize("كَتَبَ الطالبُ الدرسَ")
        == tokenize("كتب الطالب الدرس")
        == [
            "كتب",
            "الطالب",
            "الدرس",
        ]
    )
    assert tokenize("كتـــب") == ["كتب"]
    assert tokenize("שָׁלוֹם") == tokenize("שלום") == ["שלום"]  # Hebrew points
    # Case folding writes İ as i + U+0307 (dot above).
    assert tokenize("İstanbul") == tokenize("ISTANBUL") == tokenize("istanbul") == ["istanbul"]
    assert tokenize("葛\U000e0100城") == tokenize("葛城") == ["葛城"]  # a variation selector


def test_tokenize_thai_lao_khmer_myanmar_as_bigrams_of_units() -> None:
    # "Thai is the official language": no spaces between words.
    sentence = tokenize("ภาษาไทยเป็นภาษาราชการ")
    assert tokenize("ไทย") == ["ไท", "ทย"]
    assert set(tokenize("ภาษาไทย")) <= set(sentence)
    # A vowel sign or tone mark stays with its consonant: units are เ, ป็, น.
    assert tokenize("เป็น") == ["เป็", "ป็น"]
    assert tokenize("ต่") == ["ต่"]  # one unit: a unigram
    assert tokenize("ภาษา ไทย๚ GPU") == ["ภา", "าษ", "ษา", "ไท", "ทย", "gpu"]  # ๚ ends a run
    assert tokenize("ພາສາລາວ") == ["ພາ", "າສ", "ສາ", "າລ", "ລາ", "າວ"]
    assert tokenize("ភាសាខ្មែរ") == ["ភាសា", "សាខ្", "ខ្មែ", "មែរ"]  # ា is a mark in Khmer
    assert tokenize("မြန်မာဘာသာ") == ["မြန်", "န်မာ", "မာဘာ", "ဘာသာ"]


def test_the_marks_are_those_of_unicodedata() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    found = re.findall(combining_marks(), every)
    assert found == [ch for ch in every if unicodedata.category(ch).startswith("M")]


@given(st.text())
def test_any_text_is_tokenized_as_its_canonical_equivalents_are(text: str) -> None:
    terms = tokenize(text)
    assert tokenize(unicodedata.normalize("NFD", text)) == terms
    assert tokenize(unicodedata.normalize("NFC", text)) == terms
    assert all(term and not unicodedata.category(term[0]).startswith("M") for term in terms)


@given(st.text(st.characters(max_codepoint=127)))
def test_ascii_text_is_tokenized_as_any_other_text(text: str) -> None:
    # The fast path for ASCII gives what the general path gives.
    assert tokenize(f"{text} é") == [*tokenize(text), "é"]


def test_tokenize_empty_and_symbols() -> None:
    assert tokenize("") == []
    assert tokenize("  ... !!! ---  ") == []
    assert tokenize("the of and") == []


# --- store ----------------------------------------------------------------------------------


def test_query_terms_keeps_each_term_once_in_order() -> None:
    # A question that repeats a word weighs it as one that says it once.
    assert query_terms("Taxes, taxes and the tax code") == ["taxes", "tax", "code"]
