"""What several benchmarks share (imported by the scripts, which run from this folder;
``make bench`` runs every script here but this one)."""

from __future__ import annotations

from pathlib import Path

from ragloom.embeddings import Embeddings, SentenceTransformerEmbeddings

__all__ = ["REPO", "configured_embeddings"]

REPO = Path(__file__).resolve().parents[1]


def configured_embeddings(backend: str | None) -> Embeddings:
    """The embedding model of flowsettings.py (``backend`` overriding its backend)."""
    from ragloom_app.settings import AppSettings

    settings = AppSettings.load(REPO / "flowsettings.py")
    spec = dict(settings.embeddings[settings.default_embedding])
    spec.pop("class", None)
    if backend:
        spec["backend"] = backend
    return SentenceTransformerEmbeddings(**spec)
