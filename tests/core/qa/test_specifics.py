"""The specifics a question names: which kinds, which are strict, the bounds."""

from __future__ import annotations

from ragloom.qa.specifics import MAX_TEXT_CHARS, SpecificTerm, common_words, specific_terms


def _kinds(text: str) -> dict[str, str]:
    return {t.text: t.kind for t in specific_terms(text)}


def test_code_identifiers_are_strict_and_looked_up_without_their_parentheses() -> None:
    terms = {
        t.text: t for t in specific_terms("Does frobnicate() call sqlite3_foo_v2 or json_bin?")
    }
    assert terms["frobnicate()"].kind == "identifier"
    assert terms["frobnicate()"].lookups == ("frobnicate",)
    assert terms["sqlite3_foo_v2"].strict and terms["json_bin"].strict
    assert _kinds("Which method is xRandomness in wal2 mode?")["xRandomness"] == "identifier"


def test_option_names_are_strict_with_their_bare_names_looked_up() -> None:
    terms = {t.text: t for t in specific_terms("Is PRAGMA cache_spill on with --safe-mode?")}
    assert terms["PRAGMA cache_spill"].kind == "option"
    assert terms["PRAGMA cache_spill"].lookups == ("cache_spill",)
    assert terms["--safe-mode"].lookups == ("safe-mode",)
    # A compiler define is looked up both ways: the documents write either.
    (define,) = [t for t in specific_terms("Built with -DSQLITE_THREADSAFE=2?") if t.strict]
    assert define.lookups == ("DSQLITE_THREADSAFE", "SQLITE_THREADSAFE")
    assert _kinds("What does the .recover command write?")[".recover"] == "option"
    assert "command-line" not in _kinds("the command-line shell")  # hyphens are not options


def test_versions_keyword_phrases_and_quotes_are_strict_numbers_are_not() -> None:
    kinds = _kinds("Since 3.41.0, does BEGIN CONCURRENT take 4096 or 3.45 bytes in 'Fast Mode'?")
    assert kinds["3.41.0"] == "version"
    assert kinds["BEGIN CONCURRENT"] == "keyword"
    assert kinds["Fast Mode"] == "quoted"
    assert kinds["4096"] == kinds["3.45"] == "number"
    numbers = [t for t in specific_terms("4096 and 3.45") if t.kind == "number"]
    assert numbers and not any(t.strict for t in numbers)


def test_rare_names_are_strict_rare_lower_case_words_soft() -> None:
    (parquet,) = specific_terms("Which command writes to a Parquet file?")
    assert parquet == SpecificTerm("Parquet", "name", ("parquet",))
    assert parquet.strict
    # Lower case, a rare word may be a typo or another form of a word: soft.
    (typo,) = specific_terms("What is planned towrads the end?")
    assert typo.kind == "rare" and not typo.strict
    # The first word of a sentence has its capital from the sentence, not from a name.
    (first,) = specific_terms("Checksums: how are they verified? Towrads what?")[:1]
    assert first.kind == "rare" and "checksum" in first.lookups
    assert {t.kind for t in specific_terms("Is KSLOC counted? Towrads what?")} == {"name", "rare"}


def test_a_question_of_common_words_names_nothing_specific() -> None:
    assert common_words()  # the bundled vocabulary is there
    assert specific_terms("What is the weather like in the city today?") == []
    assert specific_terms("How long does it take to cook rice?") == []


def test_strict_terms_come_first_each_once_and_the_count_is_bounded() -> None:
    terms = specific_terms("A zorblax, then foo_bar, FOO_BAR and foo_bar again; a Zorblax.")
    assert [(t.text, t.kind) for t in terms] == [
        ("foo_bar", "identifier"),
        ("Zorblax", "name"),  # the name, strict, is kept over the same word in lower case
    ]
    many = " ".join(f"name_{i}" for i in range(100))
    assert len(specific_terms(many)) == 16
    assert len(specific_terms(many, limit=3)) == 3


def test_only_the_leading_characters_are_read() -> None:
    late = "x " * MAX_TEXT_CHARS + "frobnicate_thing()"
    assert specific_terms(late) == []
    named = {t.text: t.kind for t in specific_terms("Is é_thing() or 日本_語 named in café?")}
    assert named == {"é_thing()": "identifier", "日本_語": "identifier"}
