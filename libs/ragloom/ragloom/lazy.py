"""Exports a package imports on first use (PEP 562), so importing the package stays cheap.

``ragloom.llms`` must not import ``llama_cpp`` or ``openai``, nor ``ragloom.stores`` chromadb
(~0.8 s) or bm25s, until one of their classes is asked for. Such a package names each lazy
export's module and installs the two module hooks::

    __getattr__, __dir__ = lazy_exports(__name__, {"ChromaVectorStore": "ragloom.stores.chroma"},
                                        globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__`` for ``exports`` (name -> module).

    The first lookup of a name imports its module and stores the value in ``namespace`` (the
    package's ``globals()``), so later lookups never reach ``__getattr__``; an unknown name
    raises ``AttributeError`` as a module without the hook would.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
