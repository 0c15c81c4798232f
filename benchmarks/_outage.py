"""A server stopped in the middle of a load run (``load.py --outage chroma|postgres``).

While the users ask and upload, the Chroma server is stopped (terminated, as a restart
would) or PostgreSQL is stopped at once (``-m immediate``: connections cut, as in a
crash), left down for a while, and started again on the same port with its data. The
report sorts the answers by when they ended: before the outage, during it (until the
server answers again) and after; what the users were told during it; and how long after
the server was back the first answer succeeded (the app is never restarted).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

__all__ = ["OutageWindow", "outage_report", "stop_and_start"]


class Restartable(Protocol):
    """A server of the tests' helpers: ``ChromaServer`` or ``PostgresServer``."""

    def stop(self) -> None: ...

    def start(self) -> None: ...


@dataclass(frozen=True)
class OutageWindow:
    """When the server went down and when it answered again (``time.time()`` seconds)."""

    down: float
    up: float


def stop_and_start(server: Restartable, after: float, lasting: float) -> OutageWindow:
    """Wait ``after`` seconds, stop ``server``, wait ``lasting`` seconds, start it again."""
    time.sleep(after)
    down = time.time()
    server.stop()
    time.sleep(lasting)
    server.start()
    return OutageWindow(down, time.time())


def outage_report(
    window: OutageWindow, answers: list[tuple[float, float, str | None]], errors: list[str]
) -> list[str]:
    """Lines on the answers around ``window``: ``answers`` holds each answer's start and
    end (wall clock) and its error (``None``: answered); ``errors`` every error of the run,
    the uploads' among them."""
    phases: dict[str, list[str | None]] = {"before": [], "during": [], "after": []}
    for began, ended, error in answers:
        phase = "before" if ended < window.down else "after" if began > window.up else "during"
        phases[phase].append(error)
    lines = [f"outage: the server down for {window.up - window.down:.1f} s (stop to answering)"]
    labels = {
        "before": "ended before it",
        "during": "under way during it",
        "after": "asked after it",
    }
    for phase, found in phases.items():
        failed = sum(error is not None for error in found)
        lines.append(f"  answers {labels[phase]:20} {len(found):4}, failed {failed}")
    told = Counter(error for found in phases.values() for error in found if error)
    for error, count in told.most_common(3):
        lines.append(f"  {count:4} x {error}")
    uploads = Counter(_reason(e) for e in errors if e.startswith(("job ", "upload ", "index ")))
    lines.append(f"  uploads that failed: {sum(uploads.values())}")
    for reason, count in uploads.most_common(3):
        lines.append(f"  {count:4} x {reason}")
    soon = sorted(e - b for b, e, error in answers if 0 < b - window.up < 5 and error is None)
    if soon:
        lines.append(
            f"  answers asked in the 5 s after it: {len(soon)}, took p50 "
            f"{soon[len(soon) // 2]:.2f} s, at most {soon[-1]:.2f} s"
        )
    recovered = [ended for began, ended, error in answers if began > window.up and error is None]
    if recovered:
        lines.append(
            f"  first answer after the server was back: {min(recovered) - window.up:.2f} s later"
        )
    else:
        lines.append("  no answer succeeded after the server was back")
    return lines


def _reason(error: str) -> str:
    """An upload's error without what differs from file to file (ids, log references)."""
    found = re.search(r"'reason': \"([^\"]*)\"|'reason': '([^']*)'", error)
    reason = (found.group(1) or found.group(2)) if found else error
    return re.sub(r"'[^']*'|\(log reference [0-9a-f]+\)|\b[0-9a-f]{32}\b", "…", reason)[:160]
