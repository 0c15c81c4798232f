"""A started app over scripted LLMs and hashed embeddings, with documents indexed: real
SQLite, Chroma and BM25, no model loaded, ready in a second or two."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragloom_app.app import BaseApp
from ragloom_app.settings import AppSettings

__all__ = ["scripted_app"]


def scripted_app(
    folder: Path,
    llms: Mapping[str, Mapping[str, Any]],
    documents: Mapping[str, str] | None = None,
    **settings: Any,
) -> BaseApp:
    """An app in ``folder`` whose ``LLMS`` are ``llms`` (the first is the default), whose
    "My files" index holds ``documents`` (file name to text); ``settings`` are further
    :class:`AppSettings` fields."""
    values = AppSettings(data_dir=folder / "data", first_run_docs=None, **settings)
    values.llms = {name: dict(spec) for name, spec in llms.items()}
    values.default_llm = next(iter(llms))
    values.embeddings = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
    values.default_embedding = "hash"
    app = BaseApp(values).start()
    docs = folder / "docs"
    docs.mkdir(exist_ok=True)
    paths = []
    for name, text in (documents or {}).items():
        (docs / name).write_text(text, encoding="utf-8")
        paths.append(docs / name)
    if paths:
        outcomes = app.indices.get("My files").get_indexing_pipeline({}).run(paths)
        failed = [o for o in outcomes if o.status != "indexed"]
        assert not failed, failed
    return app
