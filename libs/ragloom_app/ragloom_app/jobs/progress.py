"""What a job's run keeps of its progress (:class:`Tally`), and the thread that renews
its heartbeat (:class:`Heartbeat`): the parts of :mod:`ragloom_app.jobs.runner` that
decide when a running job's row is written."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragloom.postgres_outage import outage_words
from ragloom_app.jobs.store import JobStore
from ragloom_app.jobs.view import MAX_JOB_OUTCOMES

__all__ = ["Heartbeat", "Tally"]

logger = logging.getLogger(__name__)

# A running job's outcomes are written once the new ones are this share of those written
# already (at least one): each write rewrites the list, and spacing them so keeps a job's
# writes of outcomes within about 1 + 1/share times their final size, not its square.
_OUTCOMES_GROWTH = 0.25


@dataclass
class Tally:
    """What one run of a job has done: every outcome (the row records the first
    MAX_JOB_OUTCOMES), how far it is, and what of it was written."""

    outcomes: list[dict[str, Any]] = field(default_factory=list)
    fraction: float = 0.0
    last_write: float = 0.0
    written: int = 0  # outcomes the job's row holds

    def due(self) -> list[dict[str, Any]] | None:
        """The outcomes to write with the next progress write, or ``None``: not yet."""
        recorded = min(len(self.outcomes), MAX_JOB_OUTCOMES)
        new = recorded - self.written
        if new <= 0 or new < self.written * _OUTCOMES_GROWTH:
            return None
        return self.outcomes[:recorded]

    def final(self, not_done: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """What :meth:`JobStore.finish` records of a job that ends now: this run's
        outcomes, then ``not_done`` (the files a cancel left, listed ``cancelled``), which
        ``files_done`` does not count: a job cancelled after 1 file of 4 did 1, not 4."""
        outcomes = [*self.outcomes, *not_done]
        return {"outcomes": outcomes[:MAX_JOB_OUTCOMES], "files_done": len(self.outcomes)}


class Heartbeat:
    """Renews a job's heartbeat from a thread while the block runs."""

    def __init__(
        self, store: JobStore, job_id: str, worker: str, attempts: int, every: float
    ) -> None:
        self._store, self._job_id, self._worker, self._every = store, job_id, worker, every
        self._attempts = attempts
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"ragloom-job-heartbeat-{job_id[:8]}", daemon=True
        )

    def _beat(self) -> None:
        failing = False  # the traceback is logged at the first failure of a run of them
        while not self._stop.wait(self._every):
            try:
                if not self._store.heartbeat(self._job_id, self._worker, self._attempts):
                    return  # finished, or taken back (the run sees it at its next write)
            except Exception as exc:  # the database down for a moment: try at the next beat
                logger.warning(
                    "job %s: heartbeat failed (%s)",
                    self._job_id,
                    outage_words(exc) or type(exc).__name__,
                    exc_info=not failing,
                )
                failing = True
            else:
                failing = False

    def __enter__(self) -> None:
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
