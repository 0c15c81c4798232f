"""The auto mode's router reads a question's kind from its wording, and says why."""

from __future__ import annotations

import time

import pytest

from ragloom.qa.routing import MAX_ROUTED_CHARS, classify_question


@pytest.mark.parametrize(
    "question",
    [
        "How many days passed between the release of 3.24.0 and the release of 3.25.0?",
        "How many years separated the first code from the first release?",
        "How many distinct test cases do the two harnesses have in total?",
        "What is the sum of the page size and the reserved bytes?",
        "How many bytes long is a WAL file holding 1000 frames of 4096-byte pages?",
        "What is 20% of the default cache size?",
        "What is the default page size multiplied by the page count?",
    ],
)
def test_a_computation_on_documented_numbers_is_arithmetic(question: str) -> None:
    route = classify_question(question)
    assert route.kind == "arithmetic"
    assert route.cues and route.reason.startswith("arithmetic: ")


@pytest.mark.parametrize(
    "question",
    [
        "What is the oldest version that supports both WITHOUT ROWID tables and row values?",
        "Compare the WAL and rollback journal modes.",
        "Is the Speaker this year older than last year?",
        "As of the release that introduced STRICT tables, how many files made up the core?",
        "The checksum VFS is verified with a query. Which option makes that table available?",
    ],
)
def test_two_things_or_a_fact_to_find_first_is_a_comparison(question: str) -> None:
    assert classify_question(question).kind == "comparison"


@pytest.mark.parametrize(
    "question",
    [
        "What is the maximum number of tables SQLite allows in a single join?",
        "On what date did D. Richard Hipp begin the SQLite project?",  # an initial, not an end
        "About how much less disk space does a database of 10-kilobyte blobs use?",
        "Which threading mode does SQLite use when compiled with -DSQLITE_THREADSAFE=2?",
        "",
    ],
)
def test_anything_else_is_a_single_fact(question: str) -> None:
    route = classify_question(question)
    assert route.kind == "single"
    assert route.cues == ()
    assert route.reason == "single: no cue of another kind"


def test_arithmetic_wins_over_comparison_when_both_are_cued() -> None:
    route = classify_question("How many days passed between both releases?")
    assert route.kind == "arithmetic"


def test_a_huge_question_is_read_only_to_its_bound_and_quickly() -> None:
    filler = "word. A " * 200_000
    started = time.perf_counter()
    route = classify_question(filler + "How many days passed between them?")
    assert time.perf_counter() - started < 1.0
    assert route.kind == "single"  # the cue lies past MAX_ROUTED_CHARS, unread
    assert len(filler) > MAX_ROUTED_CHARS
