"""Chat with a local GGUF model in-process through llama-cpp-python.

One ``llama_cpp.Llama`` is kept per process for each (model file, ``n_ctx``, ``n_threads``):
loading takes about a second, and a long-lived model reuses the KV cache of the prefix a new
prompt shares with the previous one (a follow-up question over the same evidence starts in
0.2 s instead of 9 s). ``Llama`` is not thread-safe, so each loaded model has a lock that a
generation holds from its first to its last token.

Relies on llama-cpp-python 0.3.x internals in one place, :func:`evaluated_prompt_tokens`,
which mirrors how ``Llama.generate`` decides what to re-evaluate.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from theflow import Param

from ragloom.llms.base import (
    CallTimer,
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMBusyError,
    LLMError,
    LLMResult,
    LLMStreamItem,
    Usage,
)
from ragloom.llms.fair_lock import FairLock

if TYPE_CHECKING:
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import ChatCompletionRequestMessage

    from ragloom.llms.bundled import SplitModel

__all__ = ["LlamaCppChat", "evaluated_prompt_tokens"]

logger = logging.getLogger(__name__)

# Appended to a partial assistant turn before rendering the chat template, so the prompt
# can be cut right where the content ends, before whatever the template closes the turn with.
_CONTINUE_MARK = "\x00ragloom-continue\x00"


@dataclass
class _LoadedModel:
    """A loaded model, the lock that serializes its use, and its chat template."""

    llm: llama_cpp.Llama
    path: str
    chat_formatter: Jinja2ChatFormatter  # renders a new assistant turn (what llama.cpp uses)
    turn_formatter: Jinja2ChatFormatter  # renders the turns only, to continue the last one
    eos_text: str
    lock: FairLock = field(default_factory=FairLock)  # answers take turns in order


_MODELS: dict[tuple[str, int, int], _LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def _load_model(
    path: str, n_ctx: int, n_threads: int, n_batch: int, seed: int | None, verbose: bool
) -> _LoadedModel:
    """The process-wide model for (path, n_ctx, n_threads), loaded and warmed on first use.

    ``n_batch``, ``seed`` and ``verbose`` of the first caller win: they do not change what the
    model answers greedily, and a second copy would double the memory.
    """
    key = (str(Path(path).resolve()), n_ctx, n_threads)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        started = time.perf_counter()
        extra: dict[str, Any] = {} if seed is None else {"seed": seed}
        try:
            llm = llama_cpp.Llama(
                model_path=key[0],
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_batch=n_batch,
                verbose=verbose,
                **extra,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load {key[0]}: {exc}") from exc
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise LLMError(
                f"{key[0]} has no chat template (tokenizer.chat_template) in its metadata"
            )
        # Pin the GGUF's own template: llama-cpp-python may otherwise swap in a built-in format
        # it guesses from the metadata, and our token counts must match what it renders.
        llm.chat_format = "chat_template.default"
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        loaded = _LoadedModel(
            llm=llm,
            path=key[0],
            chat_formatter=Jinja2ChatFormatter(template, eos, bos, stop_token_ids=[eos_id]),
            turn_formatter=Jinja2ChatFormatter(template, eos, bos, add_generation_prompt=False),
            eos_text=eos,
        )
        # The first decode after loading is several times slower (allocation, page faults in
        # the mmapped weights): pay it here, not in the user's first question.
        llm.create_completion(prompt="Hello", max_tokens=1, temperature=0.0)
        logger.info(
            "loaded %s (n_ctx=%d, n_threads=%d) in %.1f s",
            key[0],
            n_ctx,
            n_threads,
            time.perf_counter() - started,
        )
        _MODELS[key] = loaded
        return loaded


def evaluated_prompt_tokens(llm: llama_cpp.Llama, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` llama.cpp will evaluate, given what its KV cache holds now.

    Call it just before the generation, under the model's lock. It mirrors
    ``Llama.generate`` of llama-cpp-python 0.3.x: the cache holds the ``llm.n_tokens`` tokens
    ``llm._input_ids`` last evaluated; their longest common prefix with the new prompt is
    kept and only the rest is evaluated. When the whole prompt is cached, the last prompt
    token is still evaluated again to get fresh logits, unless the cache is exactly the
    prompt and its logits are current (``_requires_eval`` false): then nothing is evaluated.
    """
    import numpy as np

    n_cached = int(llm.n_tokens)
    if n_cached == 0 or not tokens:
        return len(tokens)
    size = min(n_cached, len(tokens))
    differ = np.flatnonzero(llm.input_ids[:size] != np.asarray(tokens[:size], dtype=np.intc))
    common = int(differ[0]) if differ.size else size
    consumed = common == len(tokens)
    if consumed and n_cached == len(tokens) and not getattr(llm, "_requires_eval", True):
        return 0
    reused = common - 1 if consumed else common
    return len(tokens) - reused if reused > 0 else len(tokens)


def _chat_text(choice: dict[str, Any]) -> str | None:
    content: str | None = choice["delta"].get("content")
    return content


def _completion_text(choice: dict[str, Any]) -> str | None:
    text: str | None = choice.get("text")
    return text


def _streaming(method: Callable[..., object]) -> Callable[..., Iterator[dict[str, Any]]]:
    """A ``create_*completion`` method as called here, with ``stream=True``: llama-cpp-python
    types its result as "a response or an iterator of chunks", and streaming it is the latter."""
    return cast("Callable[..., Iterator[dict[str, Any]]]", method)


def _llama_messages(turns: list[dict[str, Any]]) -> list[ChatCompletionRequestMessage]:
    """Our OpenAI-style turns as llama-cpp-python types them: the same mappings, whose
    per-role TypedDicts :meth:`ChatMessage.to_dict` does not spell out."""
    return cast("list[ChatCompletionRequestMessage]", turns)


class LlamaCppChat(ChatLLM):
    """A GGUF chat model run in-process by llama.cpp (the bundled Qwen2.5-Coder by default).

    ``Usage.completion_tokens`` counts every token the model sampled, the end-of-turn token
    included (llama-cpp-python's own usage leaves that one out, so it can be one lower).
    """

    model_path: str | None = Param(None, help="GGUF file; None = the bundled model below.")
    bundled: str = Param(
        "qwen2.5-coder-0.5b",
        help="Which bundled model when no model_path: a name in ragloom.llms.bundled."
        "BUNDLED_MODELS (qwen2.5-coder-0.5b, or qwen2.5-coder-1.5b once its packages are in).",
    )
    n_ctx: int = Param(4096, help="Context size in tokens (prompt plus answer).")
    n_threads: int = Param(
        default_callback=lambda _: os.cpu_count() or 1,
        help="CPU threads (llama-cpp-python's default, half the cores, is ~35% slower).",
    )
    n_batch: int = Param(512, help="Prompt tokens evaluated per batch.")
    seed: int | None = Param(None, help="Sampling seed (only matters with temperature > 0).")
    verbose: bool = Param(False, help="Let llama.cpp log to stderr.")

    @property
    def context_window(self) -> int:
        """Tokens of prompt plus completion: ``n_ctx``."""
        return self.n_ctx

    @property
    def name(self) -> str:
        """``llama.cpp/<file name>``."""
        if self.model_path:
            return f"llama.cpp/{Path(self.model_path).name}"
        return f"llama.cpp/{self._bundled_model().filename}"

    def llama(self) -> llama_cpp.Llama:
        """The shared ``llama_cpp.Llama`` (loaded on first use); hold no reference across calls."""
        return self._model().llm

    @property
    def supports_grammar(self) -> bool:
        """llama.cpp constrains sampling with GBNF grammars."""
        return True

    @property
    def supports_json_schema(self) -> bool:
        """A JSON schema is turned into a grammar."""
        return True

    @property
    def continues_assistant_turn(self) -> bool:
        """The prompt is rendered here, so an assistant turn can be left open."""
        return True

    @property
    def in_line(self) -> int:
        """Calls generating with this model or waiting their turn (0 if it is idle or
        not loaded yet)."""
        loaded: _LoadedModel | None = getattr(self, "_ragloom_model", None)
        return loaded.lock.in_line if loaded is not None else 0

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer (special tokens as plain text)."""
        # Tokenizing only reads the vocabulary, so it needs no lock and never waits for a
        # generation in progress.
        return len(self._model().llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        """Generate a reply piece by piece; the last item carries the :class:`LLMResult`.

        The model stays locked until the stream ends: consume it or ``close()`` it.
        """
        options = options or GenerationOptions()
        if not messages:
            raise LLMError("no messages to answer")
        if options.continue_assistant and messages[-1].role != "assistant":
            raise LLMError("continue_assistant needs an assistant message last")
        if options.tools:
            raise LLMError(
                "LlamaCppChat has no native tool calling: describe the tools in the prompt"
            )
        model = self._model()
        if not model.lock.acquire(timeout=options.turn_timeout()):
            raise LLMBusyError(
                f"{self.name} was answering other questions until this answer's deadline "
                "came; ask again when it is less busy"
            )
        try:
            # Timed from here: a call's seconds are the model's, not its wait in line.
            yield from self._generate(model, messages, options, CallTimer())
        finally:
            model.lock.release()

    def _bundled_model(self) -> SplitModel:
        """The bundled model ``bundled`` names; ``LLMError`` naming the known ones if none."""
        from ragloom.llms.bundled import BUNDLED_MODELS

        model = BUNDLED_MODELS.get(self.bundled)
        if model is None:
            known = ", ".join(BUNDLED_MODELS)
            raise LLMError(f"no bundled model {self.bundled!r} (bundled: {known})")
        return model

    def _model(self) -> _LoadedModel:
        if self.model_path:
            path = self.model_path
        else:
            from ragloom.llms.bundled import bundled_model_path

            path = str(bundled_model_path(model=self._bundled_model()))
        loaded = _load_model(
            path, self.n_ctx, self.n_threads, self.n_batch, self.seed, self.verbose
        )
        self._ragloom_model = loaded  # for in_line, which must not load the model
        return loaded

    def _generate(
        self,
        model: _LoadedModel,
        messages: Sequence[ChatMessage],
        options: GenerationOptions,
        timer: CallTimer,
    ) -> Iterator[LLMStreamItem]:
        llm = model.llm
        turns = [m.to_dict() for m in messages]
        prompt = (
            self._continuation_prompt(model, turns)
            if options.continue_assistant
            else model.chat_formatter(messages=_llama_messages(turns)).prompt
        )
        # Tokenized exactly as llama-cpp-python's chat handler does (the template renders the
        # special tokens itself, so no BOS is added), so the count is the prompt's real size.
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) >= self.n_ctx:
            raise LLMError(
                f"the prompt has {len(tokens)} tokens but the context holds {self.n_ctx} "
                f"(prompt plus answer) in {self.name}: shorten the prompt or raise n_ctx"
            )
        evaluated = evaluated_prompt_tokens(llm, tokens)
        common: dict[str, Any] = {
            "temperature": options.temperature,
            "max_tokens": options.max_tokens,
            "repeat_penalty": 1.0,
            "stream": True,
        }
        if self.seed is not None:
            common["seed"] = self.seed
        # Built and parsed before anything runs, so a bad grammar or schema is a clear error.
        grammar = self._grammar(model, options)
        call: Callable[..., Iterator[dict[str, Any]]]
        text_of: Callable[[dict[str, Any]], str | None]
        request: dict[str, Any]
        if options.continue_assistant:
            # A raw completion of the open turn (the JSON schema goes as its grammar).
            call, text_of = _streaming(llm.create_completion), _completion_text
            request = {
                "prompt": tokens,
                "stop": [*options.stop, model.eos_text],
                "grammar": grammar,
            }
        else:
            call, text_of = _streaming(llm.create_chat_completion), _chat_text
            request = {
                "messages": turns,
                "stop": list(options.stop),
                "grammar": grammar if options.grammar is not None else None,
                # llama-cpp-python turns this schema into the same grammar as ``_grammar``.
                "response_format": (
                    {"type": "json_object", "schema": options.json_schema}
                    if options.json_schema is not None
                    else None
                ),
            }
        try:
            pieces: list[str] = []
            finish_reason = "stop"
            for chunk in call(**request, **common):
                choice = chunk["choices"][0]
                finish_reason = choice.get("finish_reason") or finish_reason
                text = text_of(choice)
                if text:
                    timer.mark()
                    pieces.append(text)
                    yield LLMStreamItem(text)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"{self.name} failed to generate: {exc}") from exc
        # Every sampled token but the last is evaluated (appended to the cache), so the cache
        # grew by (sampled - 1) past the prompt: an exact count with no per-token hook.
        sampled = max(0, int(llm.n_tokens) - len(tokens) + 1)
        usage = Usage(
            prompt_tokens=len(tokens),
            prompt_tokens_evaluated=evaluated,
            completion_tokens=sampled,
            seconds=timer.elapsed(),
            first_token_seconds=timer.first_token,
        )
        yield LLMStreamItem("", LLMResult("".join(pieces), usage, finish_reason))

    @staticmethod
    def _continuation_prompt(model: _LoadedModel, turns: list[dict[str, str]]) -> str:
        """The prompt with the last (assistant) turn left open after its content."""
        marked = [*turns[:-1], {**turns[-1], "content": turns[-1]["content"] + _CONTINUE_MARK}]
        rendered = model.turn_formatter(messages=_llama_messages(marked)).prompt
        cut = rendered.rfind(_CONTINUE_MARK)
        if cut < 0:
            raise LLMError("the chat template dropped the assistant turn to continue")
        return rendered[:cut]

    def _grammar(self, model: _LoadedModel, options: GenerationOptions) -> LlamaGrammar | None:
        """The ``LlamaGrammar`` for the options' grammar or JSON schema, checked, or None."""
        from llama_cpp import llama_cpp as native
        from llama_cpp.llama_grammar import LlamaGrammar

        if options.grammar is not None:
            source, what = options.grammar, "grammar"
        elif options.json_schema is not None:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            try:
                source, what = json_schema_to_gbnf(json.dumps(options.json_schema)), "JSON schema"
            except Exception as exc:  # the converter raises bare Exceptions on what it lacks
                raise LLMError(f"unsupported JSON schema: {exc}") from exc
        else:
            return None
        grammar = LlamaGrammar.from_string(source, verbose=self.verbose)
        # from_string does not parse; a bad grammar would only fail inside the sampler (a
        # null sampler pointer). Parse it once here to raise a clear error instead.
        vocab = model.llm._model.vocab
        checked = native.llama_sampler_init_grammar(vocab, source.encode(), b"root")
        if not checked:
            raise LLMError(f"llama.cpp could not parse the {what} (GBNF):\n{source[:500]}")
        native.llama_sampler_free(checked)
        return grammar
