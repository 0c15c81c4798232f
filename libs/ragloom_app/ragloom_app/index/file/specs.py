"""What a file index can be made with (its admin settings) and searched with (its user
settings), and the check of a new index's config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragloom.loaders import FileReader, default_readers
from ragloom_app.index.file.archives import ARCHIVE_SUFFIXES
from ragloom_app.reasoning.base import SettingSpec

__all__ = [
    "RETRIEVAL_MODES",
    "VISIBILITIES",
    "admin_settings",
    "file_types",
    "normalized_config",
    "user_settings",
]

RETRIEVAL_MODES = ("hybrid", "vector", "fulltext")
"""Values of the ``retrieval_mode`` setting: both retrievers fused, or one alone."""

_RETRIEVAL_MODE_LABELS = ("Hybrid", "Vector", "Full-text")

VISIBILITIES = ("private", "shared")


def file_types(readers: Mapping[str, FileReader]) -> list[str]:
    """Extensions a file index can take: those a reader reads, and zip archives of them."""
    return sorted({*readers, *ARCHIVE_SUFFIXES})


def admin_settings(readers: Mapping[str, FileReader]) -> dict[str, dict[str, Any]]:
    """The settings, with every file type of ``readers`` (plugins' too) offered."""
    offered = file_types(readers)
    return {
        "chunk_size": {
            "name": "Chunk size (tokens)",
            "value": 240,
            "component": "number",
            "info": "Tokens of the embedding model per chunk.",
        },
        "chunk_overlap": {
            "name": "Chunk overlap (tokens)",
            "value": 36,
            "component": "number",
        },
        "extensions": {
            "name": "File types",
            "value": offered,
            "component": "dropdown",
            "choices": offered,
            "multiselect": True,
        },
        "visibility": {
            "name": "Visibility",
            "value": "private",
            "component": "dropdown",
            "choices": list(VISIBILITIES),
            "info": "Private: only its owner searches it; shared: every user does.",
        },
    }


def user_settings() -> dict[str, SettingSpec]:
    """How a request searches this index: the mode, the definition prior, MMR, LLM reranking."""
    return {
        "retrieval_mode": {
            "name": "Search",
            "value": "hybrid",
            "component": "dropdown",
            "choices": list(zip(_RETRIEVAL_MODE_LABELS, RETRIEVAL_MODES, strict=True)),
            "info": "Vector search matches meaning, full-text (BM25) matches words; "
            "hybrid fuses both rankings and finds the most.",
        },
        "definition_prior": {
            "name": "Reference pages first",
            # Off until measured to help: on SQLite's manual it moved one question out of
            # the first place and none into the first three (docs/performance.md).
            "value": False,
            "component": "checkbox",
            "info": "Hybrid search: when the question names a function, option or constant, "
            "the passage that defines it (as a heading, term or signature) comes before "
            "passages that only mention it.",
        },
        "mmr": {
            "name": "Diverse passages (MMR)",
            "value": False,
            "component": "checkbox",
            "info": "Prefer passages that do not repeat each other.",
        },
        "mmr_lambda": {
            "name": "MMR relevance weight (λ)",
            "value": 0.5,
            "component": "number",
            "minimum": 0.0,
            "maximum": 1.0,
            "step": 0.1,
            "info": "1: relevance only; 0: diversity only.",
        },
        "rerank": {
            "name": "Check each passage with the LLM",
            "value": False,
            "component": "checkbox",
            "info": "One LLM call per passage keeps only relevant ones: slow and weak "
            "with the small default model.",
        },
    }


def normalized_config(
    config: Mapping[str, Any], readers: Mapping[str, FileReader] | None = None
) -> dict[str, Any]:
    """``config`` with every admin setting checked and typed; raises ``ValueError``.

    Settings left out keep their defaults; unknown keys are refused, so a typo never
    passes silently. File types must be read by one of ``readers`` (default: the
    built-in readers); a list of all of them is left out of the result, so that the
    index also takes the file types of plugins installed later (see ``FileIndex.setting``).
    """
    readers = default_readers() if readers is None else readers
    specs = admin_settings(readers)
    unknown = sorted(set(config) - set(specs))
    if unknown:
        raise ValueError(f"unknown index settings: {', '.join(unknown)}")
    values = {key: config.get(key, spec["value"]) for key, spec in specs.items()}
    size, overlap = _whole(values["chunk_size"]), _whole(values["chunk_overlap"])
    if size < 16:
        raise ValueError(f"chunk size must be at least 16 tokens, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be in [0, chunk size), got {overlap}")
    extensions = [str(e).lower() for e in values["extensions"] or []]
    known = set(file_types(readers))
    if not extensions or not set(extensions) <= known:
        raise ValueError(f"file types must be some of {', '.join(sorted(known))}, got {extensions}")
    if values["visibility"] not in VISIBILITIES:
        raise ValueError(f"visibility must be private or shared, got {values['visibility']!r}")
    normalized = {**values, "chunk_size": size, "chunk_overlap": overlap}
    if set(extensions) == known:
        del normalized["extensions"]
    else:
        normalized["extensions"] = sorted(set(extensions))
    return normalized


def _whole(value: Any) -> int:
    """``value`` as a chunk size or overlap: a whole number, as a number (``300``,
    ``300.0``: a form's number field gives floats) or as text (``"300"``). A fraction
    (``300.7``), a boolean, infinity or NaN is refused, never cut to a number."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError("chunk size and overlap must be whole numbers")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("chunk size and overlap must be whole numbers") from None
