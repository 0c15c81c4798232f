"""What kind of server an OpenAI-compatible endpoint is, and its own token counts.

Used by :class:`ragloom.llms.openai_compat.OpenAIChat`: llama.cpp's ``llama-server`` and
llama-cpp-python's server take extensions (a GBNF grammar, ``repeat_penalty``) and
tokenize text beside their ``/v1`` routes; other servers do neither. The kind is read from
the server's ``/models`` listing (:func:`kind_from_listing`); a server that cannot list
its models fails the request.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

__all__ = [
    "SERVER_KINDS",
    "TOKENIZE_PATHS",
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


def server_token_count(root: str, path: str, text: str, *, timeout: float) -> int | None:
    """Tokens of ``text`` by the server's tokenizer at ``root + path``, or None when that
    fails (logged)."""
    import httpx

    body = {"input": text} if path == "/extras/tokenize" else {"content": text}
    try:
        response = httpx.post(root + path, json=body, timeout=timeout)
        response.raise_for_status()
        return len(response.json()["tokens"])
    except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
        logger.warning("%s%s failed (%s): estimating tokens instead", root, path, exc)
        return None
