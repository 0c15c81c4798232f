"""Which request bodies are JSON, as FastAPI (and so gradio) decides it."""

from __future__ import annotations

__all__ = ["is_json_media_type"]


def is_json_media_type(content_type: str) -> bool:
    """Whether a body of ``content_type`` is read as JSON: its media type, in any case,
    ``application/json`` or ``application/<anything>+json`` (parameters aside)."""
    media = content_type.split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))
