"""The chat's file filter: which indexed files, across the user's indices, a question searches.

Every function takes the id of the user it acts for: only the indices that user may read
are listed or mapped, so the filter never names another user's private index or file.

A choice's label is ``index / file`` and its value ``<index id>/<source id>``, which stays
unambiguous whatever the names hold. No file chosen means every file: the page then
passes no filter at all, which keeps Chroma on its fast unfiltered search.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import gradio as gr

from ragloom_app.app import BaseApp

__all__ = ["file_choices", "filter_update", "selected_sources"]

logger = logging.getLogger(__name__)


def file_choices(app: BaseApp, user_id: str) -> list[tuple[str, str]]:
    """``(index / file, value)`` for every indexed file of the indices ``user_id`` may read,
    index by index, oldest first."""
    choices: list[tuple[str, str]] = []
    for index in app.indices.readable_by(user_id):
        try:
            sources = index.list_sources()
        except Exception:  # one broken index must not empty the filter of the others
            logger.exception("cannot list the files of %r", index.name)
            continue
        for source in sources:
            if str(source.get("status")) == "indexed":
                choices.append((f"{index.name} / {source['name']}", f"{index.id}/{source['id']}"))
    return choices


def selected_sources(
    app: BaseApp, values: Iterable[str] | None, user_id: str
) -> dict[str, list[str]] | None:
    """The ``selected_sources`` of :meth:`ChatPage.ask` for the chosen filter values.

    ``None`` (search everything) when nothing is chosen; otherwise every index ``user_id``
    may read is mapped, those without a chosen file to an empty list, so they are not
    searched. A value naming an index it may not read is dropped.
    """
    chosen = [v for v in values or [] if isinstance(v, str) and "/" in v]
    if not chosen:
        return None
    readable = app.indices.readable_by(user_id)
    by_id: dict[str, list[str]] = {str(index.id): [] for index in readable}
    for value in chosen:
        index_id, source_id = value.split("/", 1)
        if index_id in by_id:  # an index deleted since the page loaded is dropped
            by_id[index_id].append(source_id)
    names = {str(index.id): index.name for index in readable}
    return {names[index_id]: ids for index_id, ids in by_id.items()}


def filter_update(app: BaseApp, current: Iterable[str] | None, user_id: str) -> Any:
    """Fresh choices for the filter, keeping the chosen files that still exist."""
    choices = file_choices(app, user_id)
    known = {value for _, value in choices}
    kept = [v for v in current or [] if v in known]
    return gr.update(choices=choices, value=kept)
