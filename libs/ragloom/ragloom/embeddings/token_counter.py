"""A token counter that can cross to a worker process: it travels as the tokenizer's JSON.

``SentenceTransformerEmbeddings.count_tokens`` is a method of the loaded model, which is
neither picklable nor small. The splitter needs only the tokenizer, so files are chunked
in the readers sandbox with a :class:`TokenizerCounter`: it pickles to the tokenizer's
JSON (about 0.7 MB for the bundled model) and, in each process, builds one
``tokenizers.Tokenizer`` from it on first use, shared by every counter with the same JSON.
Counts are those of the model's own tokenizer, special tokens excluded, never truncated.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["TokenizerCounter"]

# Built tokenizers by the sha256 of their JSON: one per tokenizer per process.
_BUILT: dict[str, Any] = {}
_BUILT_LOCK = threading.Lock()


def _build(digest: str, tokenizer_json: str) -> Any:
    with _BUILT_LOCK:
        built = _BUILT.get(digest)
        if built is None:
            import tokenizers

            built = tokenizers.Tokenizer.from_str(tokenizer_json)
            built.no_truncation()
            built.no_padding()
            _BUILT[digest] = built
        return built


class TokenizerCounter:
    """Counts tokens with a Hugging Face ``tokenizers`` tokenizer given by its JSON.

    ``tokenizer_json`` is the tokenizer's serialised form (``Tokenizer.to_str()``); or
    ``load`` gives it on first need, so that creating a counter loads no model. Only the
    JSON is pickled. A model without such a tokenizer (``load`` returns ``None``) counts
    with ``fallback`` instead, in this process only: such a counter does not pickle, so
    files are chunked in the app rather than in the readers sandbox.
    """

    def __init__(
        self,
        tokenizer_json: str | None = None,
        *,
        load: Callable[[], str | None] | None = None,
        fallback: Callable[[str], int] | None = None,
    ) -> None:
        if (tokenizer_json is None) == (load is None):
            raise ValueError("give the tokenizer's JSON or a function that loads it, not both")
        self._json = tokenizer_json
        self._load = load
        self._loaded = tokenizer_json is not None
        self._fallback = fallback
        self._tokenizer: Any = None
        self._digest: str | None = None  # the JSON's sha256, once computed (pickled too)

    @property
    def tokenizer_json(self) -> str | None:
        """The tokenizer's JSON (loaded on first use if the counter was given ``load``);
        ``None`` when the model has none."""
        if not self._loaded:
            assert self._load is not None
            self._json = self._load()
            self._loaded = True
        return self._json

    def __call__(self, text: str, /) -> int:
        """The number of tokens in ``text``, special tokens excluded."""
        tokenizer = self._tokenizer
        if tokenizer is None:
            source = self.tokenizer_json
            if source is None:
                if self._fallback is None:
                    raise TypeError("this counter has neither a tokenizer nor a fallback")
                return self._fallback(text)
            tokenizer = self._tokenizer = _build(self._digest_of(source), source)
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def _digest_of(self, source: str) -> str:
        if self._digest is None:
            self._digest = hashlib.sha256(source.encode()).hexdigest()
        return self._digest

    def __reduce__(self) -> tuple[Any, ...]:
        source = self.tokenizer_json
        if source is None:
            raise TypeError("the model's tokenizer counts only in this process (no fast tokenizer)")
        # The digest travels with the JSON: a worker process given a counter for every file
        # finds its tokenizer built without hashing 0.5 MB each time.
        return (TokenizerCounter, (source,), {"_digest": self._digest_of(source)})

    def __repr__(self) -> str:
        state = "loaded" if self._loaded else "not loaded"
        return f"TokenizerCounter({state})"
