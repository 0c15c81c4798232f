"""Run untrusted work in worker processes that are killed when it runs too long.

A Python thread cannot be stopped, and code that holds the GIL in C (``round(5, -10**8)``
builds a hundred-million-digit integer) freezes every other thread of the process, the
timeout that was meant to stop it included. So work whose cost an attacker controls (a
tool call an LLM wrote, the parsing of an uploaded file) runs in a :class:`Sandbox`: a
small pool of worker processes (pebble's ``ProcessPool``, forked from multiprocessing's
fork server, never from the app) that each run with resource limits (address space, size
of files written, a lower priority).

- A call past its ``timeout`` kills its worker (nothing keeps running) and raises
  :class:`SandboxTimeout`; the pool starts a fresh worker.
- A worker that dies (a crash in a native library, the kernel's OOM killer) raises
  :class:`SandboxCrash` with the signal; one that hits its memory limit raises
  :class:`SandboxMemoryError`. The calling process goes on either way.
- Exceptions the work itself raises are raised again in the caller, unchanged.

The function and its arguments are pickled here and unpickled inside the task, and the
result likewise: an object that will not cross (a lambda, a class defined in a function)
fails its own call with :class:`SandboxTransferError` instead of breaking the pool.

Sandboxes are created on first use (:func:`get_sandbox`); nothing starts at import.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import pickle
import signal
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

from ragloom.sandbox_workers import limit_worker, worker_context

__all__ = [
    "Sandbox",
    "SandboxCrash",
    "SandboxError",
    "SandboxLimits",
    "SandboxMemoryError",
    "SandboxRaised",
    "SandboxStopped",
    "SandboxTimeout",
    "SandboxTransferError",
    "configure_sandbox",
    "get_sandbox",
    "shutdown_sandboxes",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_MiB = 1 << 20
# An exception from the work is data from the work: bounded like a result, more tightly.
_MAX_ERROR_BYTES = 64 << 10
_MAX_ERROR_CHARS = 2000
# How often a call waiting for its result looks whether its sandbox was stopped meanwhile.
_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class SandboxLimits:
    """The limits every worker of a sandbox runs under.

    ``memory_bytes`` bounds each worker's address space (``RLIMIT_AS``; a worker that
    needs more gets ``MemoryError``); ``file_bytes`` the largest file it may write
    (``RLIMIT_FSIZE``); ``result_bytes`` the pickled size of what one call returns.
    ``None`` leaves a limit off. ``workers`` run calls at once; ``tasks_per_worker``
    replaces a worker after that many calls (0: never), to hand memory back.
    ``preload`` names modules each worker imports when it starts, before it takes a
    call: what a call imports counts against its timeout, what a worker preloads does
    not (a worker that replaces a killed one would otherwise spend a tight time limit
    importing).
    """

    memory_bytes: int | None = 1024 * _MiB
    file_bytes: int | None = 64 * _MiB
    result_bytes: int = 256 * _MiB
    workers: int = 2
    tasks_per_worker: int = 0
    niceness: int = 5
    preload: tuple[str, ...] = ()


class SandboxError(Exception):
    """The work did not finish in its sandbox; ``code`` says why in one word."""

    code: ClassVar[str] = "sandbox_failed"


class SandboxTimeout(SandboxError):
    """The call ran past its timeout; its worker was killed."""

    code: ClassVar[str] = "timeout"


class SandboxCrash(SandboxError):
    """The worker process died during the call (a crash, or killed by the system)."""

    code: ClassVar[str] = "crashed"


class SandboxMemoryError(SandboxError):
    """The call needed more memory than the sandbox's limit allows."""

    code: ClassVar[str] = "out_of_memory"


class SandboxStopped(SandboxError):
    """The sandbox was stopped (the app is shutting down, or was reconfigured) while the
    call ran: nothing is known about the work, so it must not be judged by this."""

    code: ClassVar[str] = "stopped"


class SandboxRaised(SandboxError):
    """The work raised an exception that cannot cross processes as it is; ``str()`` names it."""

    code: ClassVar[str] = "raised"


class SandboxTransferError(SandboxError):
    """The call's function, arguments or result could not be passed between processes."""

    code: ClassVar[str] = "transfer_failed"


@dataclass(frozen=True)
class _Failed:
    """What a task sends back when it cannot send its result or exception as they are."""

    kind: str  # "memory", "transfer", "size" or "raised"
    message: str


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _described(exc: BaseException) -> bytes:
    text = " ".join(str(exc).split())
    if len(text) > _MAX_ERROR_CHARS:
        text = text[: _MAX_ERROR_CHARS - 1] + "…"
    return _dumps(_Failed("raised", f"{type(exc).__name__}: {text}"))


def _raised(exc: BaseException) -> bytes:
    """``exc`` ready to be raised in the caller, if it survives the trip; else described.

    Only an ``Exception`` is raised again as itself, and only a small one: ``SystemExit``
    or ``KeyboardInterrupt`` from the work would stop the caller, not the work.
    """
    if not isinstance(exc, Exception):
        return _described(exc)
    try:
        blob = _dumps(("raised", exc))
        pickle.loads(blob)  # an exception with extra __init__ arguments may not come back
    except Exception:
        return _described(exc)
    return blob if len(blob) <= _MAX_ERROR_BYTES else _described(exc)


def _run_pickled(payload: bytes, result_bytes: int) -> bytes:
    """The task every worker runs: unpickle the call, run it, pickle what came of it."""
    try:
        function, args, kwargs = pickle.loads(payload)
    except MemoryError:
        return _dumps(_Failed("memory", "the call ran out of memory"))
    except Exception as exc:
        return _dumps(_Failed("transfer", f"the call could not be unpacked: {exc!r}"))
    try:
        value = function(*args, **kwargs)
    except MemoryError:
        return _dumps(_Failed("memory", "the call ran out of memory"))
    except BaseException as exc:  # SystemExit too: it must end the call, not the worker
        return _raised(exc)
    try:
        blob = _dumps(("ok", value))
    except MemoryError:
        return _dumps(_Failed("memory", "the result ran out of memory"))
    except Exception as exc:
        return _dumps(_Failed("transfer", f"the result could not be passed back: {exc!r}"))
    if len(blob) > result_bytes:
        size = f"{len(blob) / _MiB:.1f} MiB"
        limit = f"{result_bytes / _MiB:g} MiB"
        return _dumps(_Failed("size", f"the result is {size}, over the {limit} limit"))
    return blob


def _signal_name(exitcode: int | None) -> str:
    if exitcode is None:
        return "an unknown cause"
    if exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-exitcode).name}"
        return f"signal {-exitcode}"
    return f"exit code {exitcode}"


class Sandbox:
    """A pool of limited worker processes for one kind of work (see the module docs).

    Thread-safe: several threads may :meth:`run` at once; at most ``limits.workers``
    calls run together and the others wait for a worker (their timeout starts when
    their call starts).
    """

    def __init__(self, name: str, limits: SandboxLimits | None = None) -> None:
        self.name = name
        self.limits = limits or SandboxLimits()
        self._pool: Any = None  # pebble.ProcessPool, started on first use
        self._stopped: weakref.WeakSet[Any] = weakref.WeakSet()  # pools close() stopped
        self._lock = threading.Lock()

    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None or not self._pool.active:
                from pebble import ProcessPool

                self._pool = ProcessPool(
                    max_workers=self.limits.workers,
                    max_tasks=self.limits.tasks_per_worker,
                    initializer=limit_worker,
                    initargs=(self.limits,),
                    context=worker_context(self.limits.preload),
                )
                logger.debug("sandbox %s: started %d workers", self.name, self.limits.workers)
            return self._pool

    def _discard_pool(self, pool: Any) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        with contextlib.suppress(Exception):
            pool.stop()

    def run(self, function: Callable[..., T], *args: Any, timeout: float, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in a worker; raises :class:`SandboxError` subclasses.

        ``function`` must be importable by name (a module-level function or class), and
        its arguments and result picklable. An exception it raises is raised here.
        """
        try:
            payload = pickle.dumps((function, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise SandboxTransferError(
                f"{getattr(function, '__qualname__', function)!r} cannot be sent to a worker "
                f"process: {exc}"
            ) from exc

        def schedule(pool: Any) -> Any:
            return pool.schedule(
                _run_pickled, args=(payload, self.limits.result_bytes), timeout=timeout
            )

        pool = self._get_pool()
        try:
            future = schedule(pool)
        except RuntimeError:
            # The pool broke (a worker could not start): a new one for this call.
            self._discard_pool(pool)
            pool = self._get_pool()
            try:
                future = schedule(pool)
            except RuntimeError as exc:
                self._discard_pool(pool)
                raise SandboxCrash(f"no worker process could start: {exc}") from exc
        result: T = self._result(pool, future, timeout)  # unpickled: what function returned
        return result

    def _result(self, pool: Any, future: Any, timeout: float) -> Any:
        from pebble import ProcessExpired

        try:
            blob = self._wait(pool, future)
        except (ProcessExpired, BrokenProcessPool, CancelledError, FutureTimeout) as exc:
            if pool in self._stopped:
                # close() killed the worker: whatever pebble says of it, nothing is known
                # of the work itself.
                raise SandboxStopped("the sandbox was stopped while the call ran") from None
            if isinstance(exc, FutureTimeout):
                raise SandboxTimeout(f"stopped after {timeout:g} s (the time limit)") from None
            if isinstance(exc, ProcessExpired):
                died = _signal_name(exc.exitcode)
                raise SandboxCrash(f"the worker process died ({died})") from None
            self._discard_pool(pool)
            raise SandboxCrash(f"the worker pool broke: {exc}") from None
        except MemoryError:
            raise SandboxMemoryError(self._memory_message()) from None
        try:
            outcome = pickle.loads(blob)
        except Exception as exc:
            raise SandboxTransferError(f"the result could not be unpacked: {exc!r}") from exc
        if isinstance(outcome, _Failed):
            if outcome.kind == "memory":
                raise SandboxMemoryError(self._memory_message())
            if outcome.kind == "raised":
                raise SandboxRaised(outcome.message)
            raise SandboxTransferError(outcome.message)
        status, value = outcome
        if status == "raised":
            raise value
        return value

    def _wait(self, pool: Any, future: Any) -> Any:
        """The future's result, or :class:`SandboxStopped` once :meth:`close` stopped its
        pool (:class:`SandboxCrash` if it broke): pebble leaves the calls of a stopped pool
        unresolved forever."""
        while True:
            try:
                return future.result(timeout=_POLL_SECONDS)
            except FutureTimeout:
                if future.done():
                    # Done meanwhile: its result, or its own time limit (pebble killed it).
                    return future.result()
                if self._pool is not pool:
                    future.cancel()
                    if pool in self._stopped:
                        raise SandboxStopped("the sandbox was stopped while the call ran") from None
                    raise SandboxCrash("the worker pool broke while the call ran") from None

    def _memory_message(self) -> str:
        limit = self.limits.memory_bytes
        shown = f"the {limit // _MiB} MiB limit" if limit else "the memory available"
        return f"it needed more memory than {shown}"

    def close(self) -> None:
        """Stop every worker (running calls end with :class:`SandboxStopped`); a later
        :meth:`run` starts anew."""
        with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                self._stopped.add(pool)
        if pool is not None:
            pool.stop()
            pool.join(timeout=5)


_SANDBOXES: dict[str, Sandbox] = {}
_CONFIGURED: dict[str, tuple[SandboxLimits | None, dict[str, Any]]] = {}
_DEFAULTS: dict[str, SandboxLimits] = {}
_REGISTRY_LOCK = threading.Lock()


def configure_sandbox(name: str, limits: SandboxLimits | None = None, **changes: Any) -> None:
    """Set the limits of the shared sandbox ``name``: ``limits`` with ``changes`` applied.

    Without ``limits``, the ``changes`` apply to what ``name`` would run with otherwise
    (limits configured before, else the kind's own defaults: those :func:`get_sandbox` is
    given, e.g. ``ragloom.chunking.READERS_LIMITS``), so
    ``configure_sandbox("readers", memory_bytes=...)`` changes the memory limit alone,
    before first use or after. A sandbox already running is stopped, so the next call
    starts workers with the new limits.
    """
    with _REGISTRY_LOCK:
        before, earlier = _CONFIGURED.get(name, (None, {}))
        if limits is not None:
            _CONFIGURED[name] = (limits, dict(changes))
        else:
            _CONFIGURED[name] = (before, {**earlier, **changes})
        running = _SANDBOXES.pop(name, None)
    if running is not None:
        running.close()


def _limits_for(name: str) -> SandboxLimits:
    configured, changes = _CONFIGURED.get(name, (None, {}))
    base = configured or _DEFAULTS.get(name) or SandboxLimits()
    return replace(base, **changes) if changes else base


def get_sandbox(name: str, defaults: SandboxLimits | None = None) -> Sandbox:
    """The process's shared sandbox called ``name`` (``"tools"``, ``"readers"``).

    It runs with the limits :func:`configure_sandbox` set for ``name``, else ``defaults``
    (the kind of work's own, e.g. ``ragloom.chunking.READERS_LIMITS``), else
    :class:`SandboxLimits`' defaults.
    """
    with _REGISTRY_LOCK:
        if defaults is not None:
            _DEFAULTS.setdefault(name, defaults)
        box = _SANDBOXES.get(name)
        if box is None:
            if not _SANDBOXES:
                atexit.register(shutdown_sandboxes)
            box = _SANDBOXES[name] = Sandbox(name, _limits_for(name))
        return box


def shutdown_sandboxes() -> None:
    """Stop the workers of every shared sandbox (registered with ``atexit``)."""
    with _REGISTRY_LOCK:
        boxes = list(_SANDBOXES.values())
        _SANDBOXES.clear()
    for box in boxes:
        box.close()
