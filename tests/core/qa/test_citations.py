"""Numbered evidence and the [n] citations read back from answers."""

from ragloom.qa.citations import (
    attribute_uncited,
    build_evidence,
    citations_for,
    cited_numbers,
    split_sentences,
)
from ragloom.schema import Chunk, RetrievedChunk


def _hit(chunk_id: str, text: str, page: int | None = None, score: float = 1.0) -> RetrievedChunk:
    chunk = Chunk(id=chunk_id, text=text, source_id="s1", source_name="notes.pdf", page=page)
    return RetrievedChunk(chunk=chunk, score=score)


def words(text: str) -> int:
    return len(text.split())


def test_evidence_is_numbered_in_order_with_file_and_page() -> None:
    block = build_evidence([_hit("a", "Alpha text.", page=2), _hit("b", "Beta text.")], words, 100)
    assert block.text == "[1] (notes.pdf, page 2) Alpha text.\n[2] (notes.pdf) Beta text.\n"
    assert [item.chunk.id for item in block.items] == ["a", "b"]


def test_evidence_keeps_what_fits_the_budget_and_drops_duplicates() -> None:
    long = _hit("long", "word " * 50)
    block = build_evidence(
        [_hit("a", "short one"), long, _hit("a", "short one"), _hit("c", "x")], words, 12
    )
    assert [item.chunk.id for item in block.items] == ["a", "c"]
    assert "[2] (notes.pdf) x" in block.text


def test_same_evidence_gives_byte_identical_text() -> None:
    hits = [_hit("a", "Alpha."), _hit("b", "Beta.")]
    assert build_evidence(hits, words, 100).text == build_evidence(list(hits), words, 100).text


def test_cited_numbers_reads_lists_and_ignores_out_of_range() -> None:
    answer = "It is blue [2]. Also green [1, 3]; not [9] nor [0]. Again [2]."
    assert cited_numbers(answer, limit=3) == [2, 1, 3]
    assert cited_numbers("no citations here", limit=3) == []


def test_citations_map_to_chunk_page_and_text() -> None:
    block = build_evidence([_hit("a", "Alpha.", page=4), _hit("b", "Beta.")], words, 100)
    (citation,) = citations_for("Alpha it is [1].", block)
    assert (citation.number, citation.source, citation.page, citation.text) == (
        1,
        "notes.pdf",
        4,
        "Alpha.",
    )
    assert citation.chunk_id == "a"


def test_uncited_sentences_get_the_evidence_that_supports_them() -> None:
    block = build_evidence(
        [_hit("a", "The canteen opens at 8 am."), _hit("b", "The reactor runs at 451 kelvin.")],
        words,
        100,
    )
    answer = "The reactor runs at 451 kelvin. Cats are nice. It opens at 8 am [1]."
    assert attribute_uncited(answer, block) == (
        "The reactor runs at 451 kelvin [2]. Cats are nice. It opens at 8 am [1]."
    )


def test_uncited_sentences_in_other_scripts_get_the_evidence_search_finds() -> None:
    block = build_evidence(
        [
            _hit("a", "The reactor runs at 451 kelvin."),
            _hit("b", "كتب الطالب الدرس في المدرسة"),  # the student wrote the lesson at school
            _hit("c", "ภาษาไทยเป็นภาษาราชการของประเทศไทย"),  # Thai is Thailand's official language
        ],
        words,
        100,
    )
    # Arabic written with every vowel mark; Thai inside a longer run without spaces.
    answer = "كَتَبَ الطَّالِبُ الدَّرْسَ فِي المَدْرَسَةِ. ภาษาไทยเป็นภาษาราชการ"
    assert attribute_uncited(answer, block) == (
        "كَتَبَ الطَّالِبُ الدَّرْسَ فِي المَدْرَسَةِ [2]. ภาษาไทยเป็นภาษาราชการ [3]"
    )


def test_attribution_keeps_dotted_names_whole() -> None:
    block = build_evidence(
        [_hit("a", "Subclass ragloom_app.reasoning.BaseReasoning and edit flowsettings.py.")],
        words,
        100,
    )
    answer = "Subclass ragloom_app.reasoning.BaseReasoning and edit flowsettings.py. 好的。"
    assert attribute_uncited(answer, block) == (
        "Subclass ragloom_app.reasoning.BaseReasoning and edit flowsettings.py [1]. 好的。"
    )


def test_focused_evidence_shows_the_chosen_sentences_and_skips_empty_ones() -> None:
    text = "One fact. Two facts. Three facts."
    hits = [_hit("a", text), _hit("b", "Nothing near."), _hit("c", "Whole passage.")]
    block = build_evidence(hits, words, 100, spans=[((10, 20),), (), None])
    assert block.text == "[1] (notes.pdf) … Two facts. …\n[2] (notes.pdf) Whole passage.\n"
    assert [item.chunk.id for item in block.items] == ["a", "c"]
    assert block.items[0].chunk.text == text  # citations still point at the whole chunk


def test_sentences_split_at_end_marks_and_join_back_to_the_text() -> None:
    text = "It runs at 451 K [1]. See flowsettings.py! 反应堆很热。Why?\nDone"
    parts = split_sentences(text)
    assert parts == [
        "It runs at 451 K [1].",
        " See flowsettings.py!",
        " 反应堆很热。",
        "Why?",
        "\nDone",
    ]
    assert "".join(parts) == text


def test_cited_numbers_without_a_limit_takes_any_positive_number() -> None:
    assert cited_numbers("A [3; 1] and [0] and [12, 3].") == [3, 1, 12]
