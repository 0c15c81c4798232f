"""The cost of Ragloom's LLM layer over raw llama-cpp-python, and what prefix reuse buys.

1. Generation speed: the same chat prompt, greedy, ``max_tokens`` tokens, streamed straight
   from ``Llama.create_chat_completion(stream=True)`` ("raw") and through
   ``LlamaCppChat.stream`` ("ragloom"), on the same loaded ``Llama``. Repetitions alternate
   which goes first, so a noisy neighbour hits both alike. Both runs of a pair start with the
   same KV cache (the prompt cached by the previous run), so they measure the same work.
   Decode speed = (tokens - 1) / (last token - first token); the goal is a ratio of ~1.0.
   A raw non-streamed call is shown for reference (it skips the per-token streaming work).
2. Time to first token over a long evidence block: cold (empty KV cache), then a follow-up
   question over the same evidence (only the question and the turn header are evaluated).

    .venv/bin/python benchmarks/llm_layer.py --max-tokens 128 --repeats 5
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ragloom.llms import ChatMessage, GenerationOptions, LlamaCppChat

STORY = [
    ChatMessage("system", "You are a helpful assistant."),
    ChatMessage("user", "Write a long, detailed story about a lighthouse keeper and a storm."),
]
SYSTEM = (
    "You are Ragloom, an assistant that answers questions about the user's documents. "
    "Answer only from the numbered evidence. Cite evidence numbers in square brackets."
)


@dataclass
class Run:
    """One timed generation."""

    tokens: int
    first_token: float
    total: float
    last_token: float

    @property
    def decode_rate(self) -> float:
        return (self.tokens - 1) / max(1e-9, self.last_token - self.first_token)

    @property
    def overall_rate(self) -> float:
        return self.tokens / self.total


def timed(pieces: Iterator[str], max_tokens: int) -> Run:
    """Consume a stream of text pieces; the call must stop at ``max_tokens`` (checked)."""
    started = time.perf_counter()
    first = last = None
    for text in pieces:
        if text:
            last = time.perf_counter() - started
            first = last if first is None else first
    total = time.perf_counter() - started
    if first is None or last is None:
        raise RuntimeError("the model produced no text")
    return Run(max_tokens, first, total, last)


def raw_stream(chat: LlamaCppChat, max_tokens: int) -> Iterator[str]:
    chunks = chat.llama().create_chat_completion(
        messages=[m.to_dict() for m in STORY],
        max_tokens=max_tokens,
        temperature=0.0,
        repeat_penalty=1.0,
        stream=True,
    )
    finish = None
    for chunk in chunks:
        choice = chunk["choices"][0]
        finish = choice["finish_reason"] or finish
        yield choice["delta"].get("content") or ""
    if finish != "length":
        raise RuntimeError(f"raw run stopped early ({finish}): raise the prompt's length")


def ragloom_stream(chat: LlamaCppChat, max_tokens: int) -> Iterator[str]:
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0)
    for item in chat.stream(STORY, options):
        if item.result is not None and item.result.finish_reason != "length":
            raise RuntimeError("ragloom run stopped early: raise the prompt's length")
        yield item.text


def raw_whole(chat: LlamaCppChat, max_tokens: int) -> Run:
    started = time.perf_counter()
    out = chat.llama().create_chat_completion(
        messages=[m.to_dict() for m in STORY],
        max_tokens=max_tokens,
        temperature=0.0,
        repeat_penalty=1.0,
    )
    total = time.perf_counter() - started
    tokens = out["usage"]["completion_tokens"]
    return Run(tokens, float("nan"), total, float("nan"))


def generation_speed(chat: LlamaCppChat, max_tokens: int, repeats: int) -> None:
    contenders: dict[str, Callable[[], Run]] = {
        "raw": lambda: timed(raw_stream(chat, max_tokens), max_tokens),
        "ragloom": lambda: timed(ragloom_stream(chat, max_tokens), max_tokens),
    }
    runs: dict[str, list[Run]] = {name: [] for name in contenders}
    timed(raw_stream(chat, max_tokens), max_tokens)  # caches the prompt for every timed run
    for r in range(repeats):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            runs[name].append(contenders[name]())
    whole = [raw_whole(chat, max_tokens) for _ in range(max(1, repeats // 2))]

    print(f"\n== Generation: {max_tokens} tokens, greedy, {repeats} interleaved repetitions ==")
    print(f"{'path':<22}{'decode tok/s (median)':>24}{'min..max':>18}{'overall tok/s':>16}")
    medians = {}
    for name, items in runs.items():
        rates = [run.decode_rate for run in items]
        medians[name] = statistics.median(rates)
        overall = statistics.median(run.overall_rate for run in items)
        spread = f"{min(rates):.1f}..{max(rates):.1f}"
        print(f"{name + ' stream':<22}{medians[name]:>24.1f}{spread:>18}{overall:>16.1f}")
    whole_rate = statistics.median(run.overall_rate for run in whole)
    print(f"{'raw, not streamed':<22}{'-':>24}{'-':>18}{whole_rate:>16.1f}")
    pair_ratios = [
        rag.decode_rate / raw.decode_rate
        for rag, raw in zip(runs["ragloom"], runs["raw"], strict=True)
    ]
    # Adjacent runs share the machine's momentary load, so the per-pair ratio is the steadier
    # figure when the load varies; the ratio of medians is shown too.
    print(
        f"ratio ragloom/raw (decode): median per pair {statistics.median(pair_ratios):.3f} "
        f"[{min(pair_ratios):.3f}..{max(pair_ratios):.3f}], "
        f"of medians {medians['ragloom'] / medians['raw']:.3f}  (goal ~1.0)"
    )


def evidence_text(lines: int) -> str:
    return "\n".join(
        f"[{i}] Warehouse {i} in district {i % 7} stores {i * 13 % 97} crates of item "
        f"{chr(65 + i % 26)}{i}, inspected on day {i * 3 % 28 + 1} by inspector {i % 11}."
        for i in range(1, lines + 1)
    )


def prefix_reuse(chat: LlamaCppChat, lines: int, repeats: int) -> None:
    evidence = evidence_text(lines)
    questions = ["How many crates does warehouse 5 store?", "Who inspected warehouse 9?"]
    options = GenerationOptions(max_tokens=16, temperature=0.0)
    rows: dict[str, list] = {"cold": [], "follow-up": []}
    for _ in range(repeats):
        chat.llama().reset()  # forget every cached token: the first question starts cold
        for label, question in zip(rows, questions, strict=True):
            user = ChatMessage("user", f"Evidence:\n{evidence}\nQuestion: {question}")
            rows[label].append(chat.run([ChatMessage("system", SYSTEM), user], options).usage)

    print(f"\n== Time to first token over {lines} evidence lines, median of {repeats} ==")
    print(f"{'question':<12}{'prompt tokens':>15}{'evaluated':>12}{'first token s':>16}")
    for label, usages in rows.items():
        first = statistics.median(u.first_token_seconds or float("nan") for u in usages)
        u = usages[-1]
        print(f"{label:<12}{u.prompt_tokens:>15}{u.prompt_tokens_evaluated:>12}{first:>16.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="GGUF file (default: the bundled model)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved pairs to time")
    parser.add_argument("--n-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--evidence-lines", type=int, default=50, help="~30 tokens a line")
    parser.add_argument("--ttft-repeats", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sys.stdout.reconfigure(line_buffering=True)  # show each section as soon as it is measured

    chat = LlamaCppChat(model_path=args.model, n_threads=args.n_threads)
    started = time.perf_counter()
    chat.llama()
    print(f"model: {chat.name}, n_threads={chat.n_threads}, n_ctx={chat.n_ctx}")
    print(f"load + warm-up: {time.perf_counter() - started:.1f} s; load average {os.getloadavg()}")
    generation_speed(chat, args.max_tokens, args.repeats)
    prefix_reuse(chat, args.evidence_lines, args.ttft_repeats)
    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
