"""The span of a cited chunk that the answer quotes, and what citations carry."""

from ragloom.qa.citations import build_evidence, citations_for, citing_sentences, quoted_span
from ragloom.schema import Chunk, RetrievedChunk

CHUNK = (
    "# The Zorblax reactor\n\nThe Zorblax reactor runs at 451 kelvin. It was commissioned "
    "in 2019 in Lund and has run without a major outage since."
)


def _quoted(answer: str, number: int = 1, text: str = CHUNK) -> str | None:
    span = quoted_span(answer, number, text)
    return None if span is None else text[span[0] : span[1]]


def test_the_longest_shared_run_of_words_is_the_span() -> None:
    answer = "The reactor runs at 451 kelvin [1]. It opened in 2019 [2]."
    assert _quoted(answer) == "reactor runs at 451 kelvin"
    # Case and punctuation do not matter; the span is the chunk's own text.
    assert _quoted("it was COMMISSIONED in 2019, in Lund [1]") == (
        "It was commissioned in 2019 in Lund"
    )


def test_only_sentences_citing_that_number_count() -> None:
    answer = "The reactor runs at 451 kelvin [2]. It was commissioned in 2019 in Lund [1]."
    assert _quoted(answer, 1) == "It was commissioned in 2019 in Lund"
    assert _quoted(answer, 2) == "reactor runs at 451 kelvin"
    assert quoted_span(answer, 3, CHUNK) is None


def test_a_paraphrase_or_a_run_of_stop_words_quotes_nothing() -> None:
    assert quoted_span("It is quite warm there [1].", 1, CHUNK) is None
    assert quoted_span("It was in the [1].", 1, "It was in the box.") is None
    assert quoted_span("A reactor, it says [1].", 1, CHUNK) is None
    # Two words other than stop words are a quote; min_words asks for more.
    assert _quoted("Yes, 451 kelvin [1].") == "451 kelvin"
    assert quoted_span("Yes, 451 kelvin [1].", 1, CHUNK, min_words=3) is None


def test_citation_lists_and_markers_after_the_sentence() -> None:
    assert _quoted("It has run without a major outage. [1]") == "has run without a major outage"
    assert _quoted("It has run without a major outage [2, 1].") == (
        "has run without a major outage"
    )
    assert citing_sentences("It runs hot. [1] Fine [2, 1].", 1) == ["It runs hot.", "Fine  ."]


def test_cjk_text_is_compared_character_by_character() -> None:
    text = "电池储能系统可以平滑太阳能发电"
    assert _quoted("储能系统可以平滑输出[1]。", text=text) == "储能系统可以平滑"


def test_words_of_other_scripts_are_compared_as_search_compares_them() -> None:
    # Hindi vowel signs are part of the span; Arabic vowel marks the chunk leaves out
    # are no difference; Thai, written without spaces, unit by unit.
    hindi = "नदी का पानी ठंडा है और साफ़ है।"
    assert _quoted("पानी ठंडा है [1]।", text=hindi) == "पानी ठंडा है"
    arabic = "كتب الطالب الدرس أمس"
    assert _quoted("كَتَبَ الطَّالِبُ الدَّرْسَ [1].", text=arabic) == "كتب الطالب الدرس"
    thai = "ภาษาไทยเป็นภาษาราชการของประเทศไทย"
    assert _quoted("ภาษาไทยเป็นภาษาราชการ [1]", text=thai) == "ภาษาไทยเป็นภาษาราชการ"


def test_citations_carry_found_by_and_the_highlight() -> None:
    hit = RetrievedChunk(
        Chunk(id="c1", text=CHUNK, source_id="s", source_name="zorblax.md"),
        score=0.03,
        found_by={"vector": 0.62, "fulltext": 7.1},
    )
    evidence = build_evidence([hit], lambda text: len(text.split()), 500)
    (citation,) = citations_for("The reactor runs at 451 kelvin [1].", evidence)
    assert citation.found_by == {"vector": 0.62, "fulltext": 7.1}
    assert citation.highlight is not None
    assert CHUNK[slice(*citation.highlight)] == "reactor runs at 451 kelvin"
