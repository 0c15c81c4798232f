"""How a sandbox's worker processes start: forked from a fork server, then limited.

Forking the app itself could deadlock (its threads hold locks a child would inherit held),
and ``spawn`` starts a fresh interpreter for every worker: about 0.3 s of CPU with the
readers' imports, paid again whenever a worker is replaced (after its ``tasks_per_worker``
calls, or a timeout), while the app serves. multiprocessing's fork server is one process,
started on first use, that imports the app's main module and the sandboxes' preloads once
and runs nothing else; a worker is a fork of it, ready in milliseconds (36 ms of CPU, docs/
performance.md). Each worker then applies its sandbox's limits (:func:`limit_worker`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import threading
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragloom.sandbox import SandboxLimits

__all__ = ["limit_worker", "worker_context"]

logger = logging.getLogger(__name__)

# What the fork server imports when it starts, in order. Only modules this process could
# import: the server dies on any error but ImportError, and every worker with it.
_PRELOADED: dict[str, None] = {"__main__": None}
_PRELOADED_LOCK = threading.Lock()


def worker_context(preload: tuple[str, ...]) -> BaseContext:
    """The fork server's context, with ``preload`` added to what it imports when it starts.

    The preload list is process-wide (``set_forkserver_preload``) and read once, when the
    server starts: a sandbox whose ``preload`` comes later imports it in each worker
    (:func:`limit_worker`), as a module that fails to import here does.
    """
    context = multiprocessing.get_context("forkserver")
    with _PRELOADED_LOCK:
        for module in preload:
            if module not in _PRELOADED and _importable(module):
                _PRELOADED[module] = None
        context.set_forkserver_preload(list(_PRELOADED))
    return context


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)  # what the app runs imports it, or will
    except Exception:
        logger.warning("sandbox: %s cannot be imported; each worker tries again", module)
        return False
    return True


def limit_worker(limits: SandboxLimits) -> None:
    """Pebble's worker initializer: apply ``limits`` to the new worker process."""
    import resource

    for kind, value in (
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
    ):
        if value is not None:
            # Never above a hard limit set already (``ulimit -v``): raising it would fail
            # and the worker would die at every start.
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
    if limits.niceness:
        with contextlib.suppress(OSError):
            os.nice(limits.niceness)
    # A worker must never take the terminal's Ctrl-C meant for the app; the app stops it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for module in limits.preload:
        try:
            importlib.import_module(module)
        except Exception:
            # Never fatal here: a worker whose initializer fails is replaced, forever.
            # The call that needs the module fails with the import error instead.
            logger.warning("sandbox worker: could not preload %s", module, exc_info=True)
