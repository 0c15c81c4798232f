"""The request's term lookup over several indices: found in any, missing only in all."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragloom_app.index.base import BaseIndex
from ragloom_app.index.terms import searched_terms
from tests.helpers.file_index import hash_file_index


@dataclass
class _Answering(BaseIndex):
    """An index type that knows a fixed set of words, recording what it was asked."""

    words: set[str] = field(default_factory=set)
    fails: bool = False
    asked: list[tuple[list[str], Collection[str] | None]] = field(default_factory=list)

    def find_terms(
        self, terms: Sequence[str], selected: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        self.asked.append((list(terms), selected))
        if self.fails:
            raise RuntimeError("the lookup broke")
        return {t: t in self.words for t in terms}


def _index(tmp_path: Path, name: str, **values: object) -> _Answering:
    base = hash_file_index(tmp_path / name)
    return _Answering(base.id, name, {}, base.resources, **values)  # type: ignore[arg-type]


def test_found_in_one_index_is_found_missing_in_every_one_is_missing(tmp_path: Path) -> None:
    a = _index(tmp_path, "a", words={"alpha"})
    b = _index(tmp_path, "b", words={"beta"})
    lookup = searched_terms([(a, None), (b, ["s1"])])
    assert lookup(["alpha", "beta", "gamma"]) == {"alpha": True, "beta": True, "gamma": False}
    assert b.asked == [(["alpha", "beta", "gamma"], ["s1"])]  # its selection is passed on


def test_a_failing_or_unknowing_index_never_makes_a_term_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a = _index(tmp_path, "a", words={"alpha"})
    broken = _index(tmp_path, "broken", fails=True)
    assert searched_terms([(a, None), (broken, None)])(["gamma"]) == {"gamma": None}
    assert "looking terms up in index 'broken' failed" in caplog.text
    plain = hash_file_index(tmp_path / "plain")
    assert searched_terms([(a, None), (plain, None)])(["gamma"]) == {"gamma": False}
    assert searched_terms([])(["gamma"]) == {"gamma": None}  # no index searched
