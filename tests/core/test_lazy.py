"""lazy_exports: a package's exports imported on first use, then kept in the package."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from ragloom.lazy import lazy_exports
from tests.helpers.fresh_interpreter import printed_by


def test_first_lookup_imports_and_keeps_the_value() -> None:
    namespace: dict[str, Any] = {"eager": 1}
    getattr_, dir_ = lazy_exports("pkg", {"dedent": "textwrap"}, namespace)
    assert getattr_("dedent") is textwrap.dedent
    assert namespace["dedent"] is textwrap.dedent  # later lookups never reach __getattr__
    assert dir_() == ["dedent", "eager"]


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    getattr_, _ = lazy_exports("pkg", {}, {})
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'missing'"):
        getattr_("missing")


def test_the_core_packages_import_their_heavy_parts_only_when_asked() -> None:
    shown = printed_by(
        """
        import sys
        import ragloom.llms, ragloom.stores
        before = {m for m in ("chromadb", "llama_cpp", "openai", "bm25s") if m in sys.modules}
        ragloom.stores.BM25Store
        print(sorted(before), "bm25s" in sys.modules, "chromadb" in sys.modules)
        """
    )
    assert shown.split("\n")[0] == "[] True False"
