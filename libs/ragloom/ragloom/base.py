"""The base of every Ragloom component: a ``theflow.Function`` that records nothing.

Components keep theflow's composition (``Param``/``Node`` descriptors, ``__call__`` into
``run``) but none of its run tracking, caching or storage: those pickle every call to disk.
A call through ``BaseComponent`` costs about 0.06 ms (see ``benchmarks/theflow_overhead.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from theflow import Function
from theflow.context import Context

from ragloom.flow_backend import InMemoryCache

__all__ = ["BaseComponent", "InMemoryContext"]

_TRACKING_MIDDLEWARE = (
    "theflow.middleware.TrackProgressMiddleware",
    "theflow.middleware.CachingMiddleware",
    "theflow.middleware.SkipComponentMiddleware",
)


class InMemoryContext(Context):
    """theflow's context, reduced to what Ragloom uses of it: nothing.

    theflow writes run bookkeeping (run ids, per-node contexts) here on every top-level
    call and reads it back only for published parameters and run tracking, which Ragloom
    components switch off. Keeping those writes would grow the context by two entries per
    call, forever; dropping them keeps long-lived components (retrievers) constant in size.
    """

    def __init__(self) -> None:
        self._cache = InMemoryCache()
        self._global_key = "__global_key__"

    def create_context(self, context: str, exist_ok: bool = False) -> str:
        return context

    def set(self, name: str, value: Any, context: str | None = None) -> None:
        pass

    def get(self, name: str | None = None, default: Any = None, context: str | None = None) -> Any:
        return default

    def clear(self, name: str | None, context: str | None) -> None:
        pass

    def has_context(self, context: str) -> bool:
        return False


class BaseComponent(Function):
    """A theflow ``Function`` with run tracking, caching and storage switched off."""

    class Config:
        middleware_switches: ClassVar[dict[str, bool]] = dict.fromkeys(_TRACKING_MIDDLEWARE, False)
        store_result = None

    def _initialize(self) -> None:
        if getattr(self, "_ff_context", None) is None:
            self._ff_context = InMemoryContext()
        super()._initialize()

    def run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} must implement run()")
