"""A grounding report survives its JSON form, and anything else is refused, not guessed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.grounding_report import MAX_STORED_SENTENCES, GroundingReport
from ragloom.qa.grounding import check_grounding

PASSAGE = "SQLite allows 64 tables in a join; the limit is SQLITE_MAX_TABLES."


@given(
    st.lists(
        st.sampled_from(
            [
                "A join takes at most 64 tables [1].",
                "The option is SQLITE_MAX_TABLES [1].",
                "It was added in 3.35.0 [1].",
                'The error says "too many tables" [1].',
                "It is fast.",
            ]
        ),
        max_size=6,
    )
)
def test_a_report_reads_back_equal_from_its_json_form(sentences: list[str]) -> None:
    report = check_grounding(" ".join(sentences), {1: PASSAGE})
    assert GroundingReport.from_dict(report.to_dict()) == report


@pytest.mark.parametrize(
    "data",
    [
        None,
        "supported",
        {"status": "maybe"},
        {"status": "partly", "sentences": "all"},
        {"status": "partly", "sentences": [{"text": 3, "supported": True}]},
        {"status": "partly", "sentences": [{"text": "x", "specifics": [{"text": "x"}]}]},
        {"status": "partly", "sentences": [{"text": "x", "cited": ["1"]}]},
        {
            "status": "partly",
            "sentences": [{"text": "x", "specifics": [{"text": "1", "kind": "?"}]}],
        },
    ],
)
def test_anything_but_a_report_is_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        GroundingReport.from_dict(data)


def test_a_huge_stored_report_is_read_back_only_to_its_bound() -> None:
    sentence = {"text": "x", "supported": True}
    report = GroundingReport.from_dict({"status": "supported", "sentences": [sentence] * 10_000})
    assert len(report.sentences) == MAX_STORED_SENTENCES
