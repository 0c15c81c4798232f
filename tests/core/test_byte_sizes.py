"""size_text: the one way Ragloom writes a byte count for people."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.byte_sizes import size_text

KIB = 1024


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (KIB, "1 KB"),
        (100_000, "97.7 KB"),
        (64 * KIB**2, "64 MB"),
        (int(2.5 * KIB**2), "2.5 MB"),
        (KIB**3, "1 GB"),
        (KIB**2 - 1, "1 MB"),  # 1023.999 KB rounds up: a unit, not "1024 KB"
        (5 * KIB**5, "5120 TB"),  # past the largest unit, counted in it
    ],
)
def test_a_count_is_written_in_the_largest_unit_it_reaches(count: int, text: str) -> None:
    assert size_text(count) == text


@given(st.integers(min_value=0, max_value=KIB**5))
def test_the_text_reads_back_within_a_twentieth(count: int) -> None:
    number, unit = size_text(count).split()
    scale = {"bytes": 1, "KB": KIB, "MB": KIB**2, "GB": KIB**3, "TB": KIB**4}[unit]
    assert abs(float(number) * scale - count) <= max(count / 20, 0)
    assert float(number) < 1024 or unit == "TB"
