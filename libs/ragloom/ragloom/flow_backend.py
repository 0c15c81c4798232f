"""In-process cache and run storage for theflow, named by :mod:`ragloom.flow_settings`.

theflow deserializes these while it is being imported, so this module must not import
theflow itself; the classes follow theflow's cache and storage interfaces by shape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["InMemoryCache", "NoRunStorage"]


class InMemoryCache:
    """A thread-safe dict implementing theflow's cache interface, kept in this process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.RLock()

    def add(self, key: str, value: Any, timeout: int | None = None) -> None:
        with self._lock:
            self._data.setdefault(key, value)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def set(self, key: str, value: Any, timeout: int | None = None) -> None:
        with self._lock:
            self._data[key] = value

    def touch(self, key: str, timeout: int | None = None) -> None:
        """Timeouts are not supported: entries live as long as the process."""

    def get_then_set(self, key: str, func: Callable[[Any], Any], default: Any = None) -> Any:
        with self._lock:
            value = func(self._data.get(key, default))
            self._data[key] = value
            return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        with self._lock:
            del self._data[key]


class NoRunStorage:
    """Run storage that refuses to store: Ragloom never records theflow runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "theflow run storage is disabled in Ragloom; set THEFLOW_SETTINGS_MODULE "
            "to a module with a STORAGE setting to record runs"
        )

    open = exists = rm = join = url = _refuse
