"""The term lookup of one request: every index it searches, within the sources it may read."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from ragloom.qa.precheck import TermLookup, merge_lookups
from ragloom_app.index.base import BaseIndex

__all__ = ["searched_terms"]

logger = logging.getLogger(__name__)


def searched_terms(searched: Sequence[tuple[BaseIndex, Collection[str] | None]]) -> TermLookup:
    """A :data:`~ragloom.qa.precheck.TermLookup` over ``searched``: each index with the
    source ids the request may read in it (``None``: all).

    A term is found when one index holds it, missing only when every index says so; an
    index whose lookup fails is logged and counts as not knowing (None), so a broken index
    never makes a term look absent.
    """

    def find_terms(terms: Sequence[str]) -> dict[str, bool | None]:
        answers = []
        for index, selected in searched:
            try:
                answers.append(index.find_terms(terms, selected))
            except Exception:
                logger.warning("looking terms up in index %r failed", index.name, exc_info=True)
                answers.append(dict.fromkeys(terms, None))
        return merge_lookups(answers, terms)

    return find_terms
