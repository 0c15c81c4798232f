"""What every request to an OpenAI-compatible endpoint goes through: a turn among the
endpoint's request slots (:func:`endpoint_turn`), and the ``openai`` package's errors in
words that name the endpoint (:func:`translated_errors`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from ragloom.llms.base import LLMBusyError, LLMError
from ragloom.llms.fair_lock import FairSemaphore

__all__ = ["TRANSIENT_STATUSES", "endpoint_turn", "translated_errors"]

TRANSIENT_STATUSES = frozenset({408, 409, 429})
"""The answers below 500 that say to try again (every 5xx does too), as the ``openai``
package reads them when it retries a request."""

# Endpoint URL -> the requests it may take at once from this process (``max_concurrent``
# of the first model object that asked; every model object of the endpoint shares them).
_ENDPOINT_SLOTS: dict[str, FairSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


@contextlib.contextmanager
def endpoint_turn(
    endpoint: str, max_concurrent: int, timeout: float, *, limit: str = "max_concurrent"
) -> Iterator[None]:
    """Hold one of ``endpoint``'s request slots for the block (a whole stream); an
    :class:`LLMError` saying the endpoint is busy when none was free within ``timeout``
    (``limit`` names what set it, in the message)."""
    if max_concurrent < 1:
        raise LLMError(f"max_concurrent must be at least 1, not {max_concurrent}")
    with _SLOTS_LOCK:
        # First come, first served: a thread calling back to back cannot keep a slot
        # from one that waits until its timeout.
        slots = _ENDPOINT_SLOTS.setdefault(endpoint, FairSemaphore(max_concurrent))
    if not slots.acquire(timeout=timeout):
        raise LLMBusyError(
            f"{endpoint} is busy with the requests this server sent it: none ended "
            f"within {timeout:g} s ({limit})"
        )
    try:
        yield
    finally:
        slots.release()


@contextlib.contextmanager
def translated_errors(endpoint: str, timeout: float) -> Iterator[None]:
    """Turn ``openai`` exceptions into :class:`LLMError` naming ``endpoint`` and what it
    answered (the ``openai`` exception kept as the cause)."""
    import openai

    try:
        yield
    except openai.APIStatusError as exc:
        status = exc.status_code
        transient = status in TRANSIENT_STATUSES or status >= 500
        message = f"{endpoint} answered HTTP {status}: {exc.message}"
        raise LLMError(message, transient=transient) from exc
    except openai.APITimeoutError as exc:
        message = f"{endpoint} did not answer within {timeout} s"
        raise LLMError(message, transient=True) from exc
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        message = f"cannot reach {endpoint}: {exc.message} ({cause})"
        raise LLMError(message, transient=True) from exc
    except openai.OpenAIError as exc:
        raise LLMError(f"{endpoint} failed: {exc}") from exc
    except ValueError as exc:  # a streamed piece that is not JSON (json.JSONDecodeError)
        raise LLMError(f"{endpoint} sent a reply that is not JSON: {exc}") from exc
