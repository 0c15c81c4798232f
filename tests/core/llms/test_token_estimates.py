"""How many tokens a text is taken to be: the estimate of models without a tokenizer of
their own, and a llama.cpp server's tokenizer asked over real HTTP on loopback."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ragloom.llms import openai_compat
from ragloom.llms.openai_compat import OpenAIChat
from ragloom.qa.citations import build_evidence
from ragloom.schema import Chunk, RetrievedChunk
from tests.helpers.json_server import send_json, serve_handler

CHINESE = "反应堆在四百五十一开尔文下运行，有四台冷却泵。" * 10  # 230 characters


def _estimating() -> OpenAIChat:
    """An endpoint of no llama.cpp kind: counted by the estimate, nothing is sent."""
    return OpenAIChat(base_url="http://127.0.0.1:9/v1", model="m", server_kind="openai")


def test_scripts_without_spaces_are_estimated_a_token_a_character() -> None:
    llm = _estimating()
    assert llm.count_tokens("x" * 40) == 10  # the rest: 4 characters a token, as before
    assert llm.count_tokens(CHINESE) == len(CHINESE)
    for text in ("ひらがなとカタカナ", "원자로는 뜨겁다"):
        wide = len(text.replace(" ", ""))
        assert llm.count_tokens(text) == wide + (len(text) - wide) // 4
    assert llm.count_tokens("The 反应堆 runs hot.") == 3 + 15 // 4


def test_chinese_passages_are_fitted_to_the_budget_by_the_estimate() -> None:
    hits = [RetrievedChunk(Chunk(f"c{i}", CHINESE, "s", "r.md"), 1.0 - i / 10) for i in range(8)]
    evidence = build_evidence(hits, _estimating().count_tokens, 1000, None)
    # At 4 characters a token all 8 (1,840 characters) seemed to fit in 1,000 tokens.
    assert 0 < len(evidence.items) <= 1000 // len(CHINESE)


@contextlib.contextmanager
def _tokenizing_server(failures: int) -> Iterator[tuple[str, list[str]]]:
    """A llama-cpp-python-like server: /v1/models, and /extras/tokenize answering a
    token a word after failing ``failures`` times; yields its /v1 URL and the
    Authorization header of every tokenize request."""
    seen: list[str] = []
    left = [failures]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            send_json(self, 200, {"data": [{"id": "m", "object": "model", "owned_by": "me"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(self.headers.get("Authorization", ""))
            if left[0] > 0:
                left[0] -= 1
                send_json(self, 503, {"error": "loading"})
            else:
                send_json(self, 200, {"tokens": list(range(len(body["input"].split())))})

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    with serve_handler(Handler) as url:
        yield url, seen


def test_the_tokenizer_is_sent_the_key_and_asked_again_a_while_after_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(openai_compat, "TOKENIZE_RETRY_SECONDS", 0.3)
    with _tokenizing_server(failures=1) as (base_url, seen):
        chat = OpenAIChat(base_url=base_url, model="m", api_key="sk-test", max_retries=0)
        assert chat.count_tokens("one two three four") == 4  # failed: estimated (18 // 4)
        assert chat.count_tokens("five six seven eight") == 5  # not asked again at once
        assert len(seen) == 1
        time.sleep(0.4)
        assert chat.count_tokens("nine ten eleven") == 3  # the server's own count again
    assert seen == ["Bearer sk-test", "Bearer sk-test"]
