"""Chat with any OpenAI-compatible endpoint (OpenAI, llama.cpp servers, vLLM, ...).

Endpoints differ in what they accept beyond plain chat, so some options depend on the kind
of server (``server_kind``, detected once from ``/models`` when left on ``"auto"``; a
server whose ``/models`` fails is taken for "other" and sent nothing server-specific):

* a GBNF ``grammar`` is a llama.cpp extension, sent as ``extra_body={"grammar": ...}``;
  other servers get an :class:`LLMError` instead of an ignored constraint;
* llama.cpp servers also get ``repeat_penalty`` (1.0, as in-process, by default), since
  their own defaults differ;
* a JSON schema goes as ``response_format={"type": "json_schema", ...}`` (the OpenAI form),
  but as ``{"type": "json_object", "schema": ...}`` to llama.cpp servers: llama-cpp-python's
  server rejects the ``json_schema`` type (HTTP 500, "Input should be 'text' or
  'json_object'") while llama.cpp's ``llama-server`` accepts both;
* ``continue_assistant`` sends the partial assistant turn as the last message. Servers
  differ: llama.cpp's ``llama-server`` continues it as a prefill, others (OpenAI,
  llama-cpp-python's server) close it and answer in a new turn;
  :attr:`OpenAIChat.continues_assistant_turn` tells which (``assistant_prefill``).

Usage comes from the stream's final chunk (``stream_options={"include_usage": True}``);
servers that send none (llama-cpp-python's) get estimated counts (see :meth:`stream`).

Every request has a ``timeout``; connection errors and the answers that say "try again"
(408, 409, 429 and 5xx) are retried ``max_retries`` times with exponential backoff (the
``openai`` package's own), any other error is not. At most ``max_concurrent`` requests of
this process go to one endpoint at once, whichever model objects send them; the others
wait their turn, up to ``timeout`` seconds, then fail saying so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from theflow import Param

from ragloom.llms.base import (
    CallTimer,
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMError,
    LLMResult,
    LLMStreamItem,
    Usage,
)
from ragloom.llms.openai_replies import chunk_parts, completion_parts, reported_usage
from ragloom.llms.openai_requests import endpoint_turn, translated_errors
from ragloom.llms.openai_server import (
    DETECT_NO_ROUTE_STATUSES,
    DETECT_RETRY_SECONDS,
    DETECT_RETRY_TRANSIENT_SECONDS,
    DETECT_TIMEOUT_SECONDS,
    SERVER_KINDS,
    TOKENIZE_PATHS,
    TOKENIZE_RETRY_SECONDS,
    detect_lock,
    kind_from_listing,
    server_token_count,
)

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChat"]

logger = logging.getLogger(__name__)

_TOKEN_CACHE_SIZE = 4096
# Tokens a chat template adds around each message, for the estimate when a server sends no
# usage (ChatML: "<|im_start|>role\n" ... "<|im_end|>\n").
_TOKENS_PER_MESSAGE = 4


class OpenAIChat(ChatLLM):
    """A chat model behind an OpenAI-compatible HTTP endpoint, used through ``openai``."""

    base_url: str | None = Param(
        None, help="Endpoint, e.g. http://127.0.0.1:8000/v1 (None: the openai package default)."
    )
    api_key: str | None = Param(
        None, help="API key (None: env OPENAI_API_KEY, else a placeholder local servers accept)."
    )
    model: str = Param(help="Model name the endpoint serves (llama.cpp servers accept any).")
    timeout: float = Param(120.0, help="Seconds before a request is abandoned.")
    context_window: int = Param(4096, help="Tokens of prompt plus answer the model accepts.")
    max_retries: int = Param(
        2, help="Retries, with backoff, on connection errors and 408/409/429/5xx answers."
    )
    max_concurrent: int = Param(
        4,
        help="Requests this process sends the endpoint at once (the first model object of "
        "an endpoint sets it); more wait their turn, up to `timeout` seconds.",
    )
    native_tools: bool = Param(
        False,
        help="Offer tools through OpenAI tool calling (OpenAI, vLLM with a tool parser, "
        "Ollama, llama.cpp servers with a function-calling chat format).",
    )
    server_kind: str = Param(
        "auto", help="'openai', 'llama.cpp', or 'auto' (ask /models once when it matters)."
    )
    repeat_penalty: float | None = Param(
        1.0,
        help="Sent to llama.cpp servers, whose own defaults differ (llama-cpp-python's: 1.1); "
        "1.0 decodes as Ragloom's in-process llama.cpp does. None: the server's default.",
    )
    assistant_prefill: bool | None = Param(
        None,
        help="Whether the server continues a trailing assistant message (None: yes for "
        "llama.cpp's llama-server, asked once from /models; no for other servers).",
    )

    @property
    def name(self) -> str:
        """``openai-compatible/<model>``."""
        return f"openai-compatible/{self.model}"

    @property
    def supports_tool_calls(self) -> bool:
        """As configured by ``native_tools`` (endpoints do not say whether they can)."""
        return bool(self.native_tools)

    @property
    def supports_json_schema(self) -> bool:
        """OpenAI, vLLM, Ollama and llama.cpp servers take a schema in ``response_format``."""
        return True

    @property
    def supports_grammar(self) -> bool:
        """True for llama.cpp servers (asked once); False when the endpoint is unreachable."""
        try:
            return self._is_llama_cpp()
        except LLMError as exc:
            logger.warning("cannot tell whether %s takes grammars: %s", self.base_url, exc)
            return False

    @property
    def continues_assistant_turn(self) -> bool:
        """As ``assistant_prefill`` says; when unset, True for llama.cpp's llama-server."""
        if self.assistant_prefill is not None:
            return self.assistant_prefill
        try:
            return self._server() == "llama-server"
        except LLMError as exc:
            logger.warning("cannot tell whether %s continues a turn: %s", self.base_url, exc)
            return False

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by a llama.cpp server's own tokenizer (asked once per text);
        for other servers, or for a minute after asking failed, the estimate of
        :meth:`ChatLLM.count_tokens`."""
        path = self._tokenize_path() if text else None
        if path is None:
            return super().count_tokens(text)
        cache: dict[str, int] | None = getattr(self, "_token_counts", None)
        if cache is None:
            cache = {}
            self._token_counts = cache
        if (count := cache.get(text)) is None:
            count = self._server_token_count(path, text)
            if count is None:
                return super().count_tokens(text)
            if len(cache) >= _TOKEN_CACHE_SIZE:
                cache.clear()
            cache[text] = count
        return count

    @property
    def endpoint(self) -> str:
        """The base URL requests go to (for messages and logs)."""
        return str(self._client().base_url)

    def warm_up(self) -> None:
        """Build the ``openai`` client: importing the package takes about half a second,
        which a server's first answer would otherwise wait for, holding up the others
        while it runs. Sends nothing to the endpoint."""
        self._client()

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        """Generate a reply piece by piece; the last item carries the :class:`LLMResult`.

        Without usage from the server, ``prompt_tokens`` is estimated with
        :meth:`count_tokens` (plus a few tokens a message for the template) and
        ``completion_tokens`` is the number of streamed text pieces (servers send about
        one token a piece); ``prompt_tokens_evaluated`` is the prompt minus the
        ``prompt_tokens_details.cached_tokens`` the server reports, if any.
        """
        options = options or GenerationOptions()
        if not messages:
            raise LLMError("no messages to answer")
        request = self._request(messages, options)
        if options.tools:
            # Not streamed: several servers (llama.cpp's function-calling formats among
            # them) cannot stream a reply whose tool calls the model chooses itself.
            yield self._complete(request, messages, options)
            return
        pieces: list[str] = []
        finish_reason: str | None = None
        reported: Any = None
        with self._turn(options), self._translated_errors():
            timer = CallTimer()  # a call's seconds are the endpoint's, not its wait in line
            chunks = self._client().chat.completions.create(**request)
            try:
                for chunk in chunks:
                    if getattr(chunk, "usage", None) is not None:
                        reported = chunk.usage
                    for choice in chunk_parts(chunk):
                        finish_reason = choice.finish_reason or finish_reason
                        if choice.text:
                            timer.mark()
                            pieces.append(choice.text)
                            yield LLMStreamItem(choice.text)
            finally:
                chunks.close()  # an abandoned stream must not keep the connection busy
        if finish_reason is None:
            # Every server ends a reply with a reason (stop, length...); a stream that ends
            # without one was cut off, and what came is half an answer, not an answer.
            raise LLMError(
                f"{self.endpoint}: the reply broke off after {len(pieces)} pieces, "
                "before the server ended it (the connection dropped or the server stopped)"
            )
        usage = self._usage(messages, pieces, reported, timer)
        yield LLMStreamItem("", LLMResult("".join(pieces), usage, finish_reason))

    def _complete(
        self,
        request: dict[str, Any],
        messages: Sequence[ChatMessage],
        options: GenerationOptions,
    ) -> LLMStreamItem:
        """One non-streamed request, as the single (last) item of a stream."""
        request = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
        with self._turn(options), self._translated_errors():
            timer = CallTimer()
            response = self._client().chat.completions.create(**request)
        timer.mark()
        choice = completion_parts(response)
        text = choice.text
        usage = self._usage(
            messages, [text] if text else [], getattr(response, "usage", None), timer
        )
        result = LLMResult(text, usage, choice.finish_reason or "stop", choice.tool_calls)
        return LLMStreamItem(text, result)

    def _request(
        self, messages: Sequence[ChatMessage], options: GenerationOptions
    ) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for these options."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": options.temperature,
            "max_tokens": options.max_tokens,
        }
        if options.stop:
            request["stop"] = list(options.stop)
        if options.tools:
            if not self.native_tools:
                raise LLMError(f"{self.name}: native tool calling is off (native_tools=False)")
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in options.tools
            ]
            choice = options.tool_choice or "auto"
            if choice in ("auto", "none", "required"):
                request["tool_choice"] = choice
            else:
                request["tool_choice"] = {"type": "function", "function": {"name": choice}}
        extra: dict[str, Any] = {}
        if options.grammar is not None:
            if not self._is_llama_cpp():
                raise LLMError(
                    f"{self.endpoint} is not a llama.cpp server: it takes no GBNF grammar "
                    "(use json_schema, or set server_kind='llama.cpp' if it is one)"
                )
            extra["grammar"] = options.grammar
        if self.repeat_penalty is not None and self._is_llama_cpp():
            extra["repeat_penalty"] = self.repeat_penalty
        if extra:
            request["extra_body"] = extra
        if options.json_schema is not None:
            if self._is_llama_cpp():
                request["response_format"] = {"type": "json_object", "schema": options.json_schema}
            else:
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "response", "schema": options.json_schema},
                }
        return request

    def _usage(
        self, messages: Sequence[ChatMessage], pieces: list[str], reported: Any, timer: CallTimer
    ) -> Usage:
        counts = reported_usage(reported)
        if counts is not None:
            prompt, cached, completion = counts
            return Usage(
                prompt_tokens=prompt,
                prompt_tokens_evaluated=max(0, prompt - cached),
                completion_tokens=completion,
                seconds=timer.elapsed(),
                first_token_seconds=timer.first_token,
            )
        prompt = sum(self.count_tokens(m.content) + _TOKENS_PER_MESSAGE for m in messages)
        return Usage(
            prompt_tokens=prompt,
            prompt_tokens_evaluated=prompt,
            completion_tokens=len(pieces),
            seconds=timer.elapsed(),
            first_token_seconds=timer.first_token,
        )

    def _client(self) -> openai.OpenAI:
        client = getattr(self, "_openai_client", None)
        if client is None:
            import openai

            client = openai.OpenAI(
                base_url=self.base_url,
                # The openai package refuses to start without a key, even for local
                # servers that ignore it.
                api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
            self._openai_client = client
        return client

    def _is_llama_cpp(self) -> bool:
        """Whether the endpoint takes llama.cpp's extensions (asked once from /models)."""
        if self.server_kind not in SERVER_KINDS:
            raise LLMError(f"server_kind must be one of {SERVER_KINDS}, not {self.server_kind!r}")
        if self.server_kind != "auto":
            return self.server_kind == "llama.cpp"
        return self._server() != "other"

    def _server(self) -> str:
        """``"llama-server"``, ``"llama-cpp-python"`` or ``"other"``, from /models (once).

        A server without a working /models (404, 401, unreachable...) is ``"other"``: it is
        sent nothing server-specific, and the chat request goes ahead, to succeed or fail
        on its own. That is remembered for ``DETECT_RETRY_SECONDS``, then asked again.
        """
        detected = self._known_server()
        if detected is not None:
            return detected
        with detect_lock(self.endpoint):
            detected = self._known_server()  # another thread may have asked meanwhile
            if detected is not None:
                return detected
            # Once, briefly: a probe that hangs must not hold every request up (it runs
            # under the endpoint's probe lock) for the chat's own timeout and retries.
            probe = self._client().with_options(
                timeout=min(self.timeout, DETECT_TIMEOUT_SECONDS), max_retries=0
            )
            try:
                with self._translated_errors():
                    detected = kind_from_listing(probe.models.list().data)
            except LLMError as exc:
                status = getattr(exc.__cause__, "status_code", None)
                failures = getattr(self, "_detect_failures", 0) + 1
                self._detect_failures = failures
                # No such route: not there for minutes. Anything else (no answer, a 5xx: a
                # server still starting) soon, then less and less often.
                wait = (
                    DETECT_RETRY_SECONDS
                    if status in DETECT_NO_ROUTE_STATUSES
                    else min(
                        DETECT_RETRY_SECONDS, DETECT_RETRY_TRANSIENT_SECONDS * 2 ** (failures - 1)
                    )
                )
                logger.warning(
                    "cannot tell what kind of server %s is (%s): sending it nothing "
                    "server-specific, asking again in %g s",
                    self.endpoint,
                    exc,
                    wait,
                )
                retry_at: float | None = time.monotonic() + wait
                self._detected_server = ("other", retry_at)
                return "other"
            logger.info("%s looks like %s", self.endpoint, detected)
            self._detected_server = (detected, None)
            self._detect_failures = 0
            return detected

    def _known_server(self) -> str | None:
        """The kind found before, unless it was a failure's guess that has expired."""
        known: tuple[str, float | None] | None = getattr(self, "_detected_server", None)
        if known is None:
            return None
        kind, retry_at = known
        return kind if retry_at is None or time.monotonic() < retry_at else None

    def _tokenize_path(self) -> str | None:
        """Where the server tokenizes (beside /v1), or None where it does not or cannot."""
        if time.monotonic() < getattr(self, "_tokenize_retry_at", 0.0):
            return None
        try:
            server = self._server() if self.server_kind != "openai" else "other"
        except LLMError:
            return None
        return TOKENIZE_PATHS.get(server)

    def _server_token_count(self, path: str, text: str) -> int | None:
        root = self.endpoint.rstrip("/").removesuffix("/v1")
        key = self._client().api_key  # as every other request is sent: the server may want it
        count = server_token_count(root, path, text, api_key=key, timeout=self.timeout)
        if count is None:
            # Budgets still work on the estimate; asking again for every text would not help,
            # but a server that failed once (a restart) is asked again after a while.
            self._tokenize_retry_at = time.monotonic() + TOKENIZE_RETRY_SECONDS
        return count

    def _turn(self, options: GenerationOptions) -> contextlib.AbstractContextManager[None]:
        """Hold one of the endpoint's request slots for the block (a whole stream), waiting
        for one up to ``timeout`` seconds or the call's ``wait_until``, the sooner."""
        wait = options.turn_timeout(self.timeout)
        assert wait is not None  # the limit given is a number
        limit = "max_concurrent" if wait >= self.timeout else "the answer's deadline came"
        return endpoint_turn(self.endpoint, self.max_concurrent, wait, limit=limit)

    def _translated_errors(self) -> contextlib.AbstractContextManager[None]:
        """Turn ``openai`` exceptions into :class:`LLMError` naming the endpoint and status."""
        return translated_errors(self.endpoint, self.timeout)
