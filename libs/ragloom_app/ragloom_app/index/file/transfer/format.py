"""What an export holds and the names shared by export and import (see the package docs)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragloom_app.errors import UserFacingError

__all__ = [
    "BATCH",
    "EXPORT_FORMAT",
    "FIXED_MEMBERS",
    "STORED_MEMBER",
    "ImportLimits",
    "IndexTransferError",
    "TransferReport",
    "embedding_identity",
]

EXPORT_FORMAT = 1
"""The version of the layout the package docs describe; an import refuses another."""
STORED_MEMBER = re.compile(r"files/[0-9a-f]{64}(\.[a-z0-9]{1,16})?")
FIXED_MEMBERS = {"manifest.json", "sources.jsonl", "chunks.jsonl", "vectors.f32"}
BATCH = 512


class IndexTransferError(UserFacingError):
    """An export or import that cannot be done, saying why."""


@dataclass(frozen=True)
class ImportLimits:
    """What an import file may hold (it may come from anyone)."""

    max_bytes: int = 64 << 30
    """Bytes of all its members once unpacked."""
    max_chunks: int = 5_000_000
    max_sources: int = 1_000_000
    max_line_bytes: int = 4 << 20
    """Bytes of one JSON line (a chunk's text and offsets, one file's record)."""


@dataclass(frozen=True)
class TransferReport:
    """What an export wrote or an import made."""

    index: str
    sources: int
    chunks: int
    skipped: int = 0
    """Files left out of an export because they were not indexed."""
    warnings: tuple[str, ...] = ()


def embedding_identity(spec: Mapping[str, Any], dimension: int) -> dict[str, Any]:
    """What identifies the vectors' model, from its ``EMBEDDINGS`` entry or a plugin's
    (whose ``class`` may be the class itself), with no secret."""
    cls = spec.get("class", "")
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}" if isinstance(cls, type) else str(cls),
        "model": str(spec.get("model") or spec.get("model_path") or "bundled"),
        "backend": str(spec.get("backend", "")),
        "precision": str(spec.get("precision", "fp32")),
        "dimension": int(dimension),
    }
