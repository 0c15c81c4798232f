"""What rendering model text on the server costs while an answer streams.

The chat re-renders the whole answer so far at every streamed token
(``ragloom_app.ui.model_text.model_html``), so a long answer costs the square of its
length. This prints, for answers of the lengths the modes write (FullQA's answers are
capped at 384 tokens), the time of one render of the whole answer, the time of all
renders while it streams, and that time against the answer's generation at 20 tokens a
second (the bundled model on 2 cores): the share of the answer's time spent rendering.
"""

from __future__ import annotations

import argparse
import time

from ragloom_app.ui.model_text import model_html

PARAGRAPH = (
    "The Zorblax reactor runs at **451 kelvin** [1]. It was commissioned in 2019 in Lund "
    "and has run without a major outage since [2].\n\n- the loop is flushed every 90 days\n"
    "- spare pumps are kept in hall C\n\n"
)
TOKENS_PER_SECOND = 20.0


def _seconds(words: list[str]) -> tuple[float, float]:
    """One render of the whole text, and every render of its growing prefixes."""
    text = " ".join(words)
    started = time.perf_counter()
    model_html(text)
    once = time.perf_counter() - started
    started = time.perf_counter()
    for end in range(1, len(words) + 1):
        model_html(" ".join(words[:end]))
    return once, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[100, 384, 1000])
    args = parser.parse_args()
    model_html("warm up")
    words = (PARAGRAPH * 200).split(" ")
    print(f"{'tokens':>7} {'one render':>11} {'all renders':>12} {'vs generation':>14}")
    for count in args.tokens:
        once, streamed = _seconds(words[:count])
        share = streamed / (count / TOKENS_PER_SECOND)
        print(f"{count:>7} {once * 1000:>9.2f} ms {streamed:>10.3f} s {share:>13.1%}")


if __name__ == "__main__":
    main()
