"""What kind of server an OpenAI-compatible endpoint is, and its own token counts.

Used by :class:`ragloom.llms.openai_compat.OpenAIChat`: llama.cpp's ``llama-server`` and
llama-cpp-python's server take extensions (a GBNF grammar, ``repeat_penalty``) and
tokenize text beside their ``/v1`` routes; other servers do neither. The kind is read from
the server's ``/models`` listing (:func:`kind_from_listing`); a server that cannot list
its models is treated as ``"other"``, which is sent nothing server-specific.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "DETECT_RETRY_SECONDS",
    "SERVER_KINDS",
    "TOKENIZE_PATHS",
    "TOKENIZE_RETRY_SECONDS",
    "detect_lock",
    "kind_from_listing",
    "server_token_count",
]

logger = logging.getLogger(__name__)

SERVER_KINDS = ("auto", "openai", "llama.cpp")
# ``owned_by`` values of /models entries: llama-cpp-python's server says "me", llama-server
# says "llamacpp" (and adds a "meta" object).
_LLAMA_CPP_PYTHON_OWNER = "me"
_LLAMA_SERVER_OWNER = "llamacpp"
# Where each kind of llama.cpp server tokenizes text, beside its /v1 routes.
TOKENIZE_PATHS = {"llama-server": "/tokenize", "llama-cpp-python": "/extras/tokenize"}
# After a /tokenize request failed, how long token counts are estimated before the server
# is asked again (a restarting server is counted by its own tokenizer again soon after).
TOKENIZE_RETRY_SECONDS = 60.0
# After /models failed, how long the endpoint is taken for "other" before it is asked
# again: long enough that requests do not each pay for the failing probe, short enough
# that a server started after Ragloom is recognised within minutes.
DETECT_RETRY_SECONDS = 300.0
# After /models failed for a while only (no answer, a 5xx: a server still starting or
# loading its model), how long until it is asked again: a llama.cpp server is recognised
# (its grammars, used by reranking) as soon as it is up; twice as long after each failure
# in a row, up to DETECT_RETRY_SECONDS (a /models that always fails is not asked often).
DETECT_RETRY_TRANSIENT_SECONDS = 5.0
# The longest a /models probe waits, tried once: it holds the endpoint's probe lock.
DETECT_TIMEOUT_SECONDS = 10.0
# The answers that say the route is not there (or not ours): asked again only after
# DETECT_RETRY_SECONDS.
DETECT_NO_ROUTE_STATUSES = frozenset({401, 403, 404, 405})
# One /models probe at a time per endpoint (the model objects of an endpoint wait for one
# answer instead of each asking; a slow endpoint does not hold up the others).
_DETECT_LOCKS: dict[str, threading.Lock] = {}
_DETECT_LOCKS_LOCK = threading.Lock()


def detect_lock(endpoint: str) -> threading.Lock:
    """The lock the /models probes of ``endpoint`` take."""
    with _DETECT_LOCKS_LOCK:
        return _DETECT_LOCKS.setdefault(endpoint, threading.Lock())


def kind_from_listing(listed: Iterable[Any] | None) -> str:
    """``"llama-server"``, ``"llama-cpp-python"`` or ``"other"`` from /models entries
    (anything the server sent: entries that are not model objects count for nothing)."""
    entries = list(listed or [])
    owners = {getattr(m, "owned_by", None) for m in entries}
    if _LLAMA_SERVER_OWNER in owners or any(getattr(m, "meta", None) is not None for m in entries):
        return "llama-server"
    if _LLAMA_CPP_PYTHON_OWNER in owners:
        return "llama-cpp-python"
    return "other"


def server_token_count(
    root: str, path: str, text: str, *, api_key: str, timeout: float
) -> int | None:
    """Tokens of ``text`` by the server's tokenizer at ``root + path`` (sent the API key,
    as every other request is), or None when that fails (logged)."""
    import httpx

    body = {"input": text} if path == "/extras/tokenize" else {"content": text}
    headers = {"Authorization": f"Bearer {api_key}"}
    try:
        response = httpx.post(root + path, json=body, headers=headers, timeout=timeout)
        response.raise_for_status()
        tokens = response.json()["tokens"]
        if not isinstance(tokens, list):
            raise TypeError("'tokens' is not a list")
        return len(tokens)
    except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
        logger.warning("%s%s failed (%s): estimating tokens instead", root, path, exc)
        return None
