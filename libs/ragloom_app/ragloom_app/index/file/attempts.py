"""Count the attempts to index a source, so that a file which kills the process stops.

Each start is counted (``Source.attempts``) and committed before the file is read: if the
process dies while indexing it (the OOM killer, a native crash, a power cut), the count
stays, and the recovery fails a file that has stopped the process
:data:`MAX_INDEXING_ATTEMPTS` times instead of trying it at every start.

A job whose worker died runs again from the start; the new source it begins for the file
that was cut short carries the attempts counted against that content
(:func:`carried_attempts`), so that neither the job's runs nor the recoveries between
them begin the count afresh: the file stops the process at most MAX_INDEXING_ATTEMPTS
times, however its retries come.

Stopping on purpose is no crash. An attempt this process gives up cleanly (Ctrl-C in
``ragloom index add``, ``ragloom serve`` shutting down while it recovers a file) is taken
back: by the indexing thread itself when the interrupt reaches it, and at interpreter exit
for a background thread that never gets to finish. The source stays ``indexing``, so the
next recovery resumes it without holding the stop against it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from ragloom.sandbox import SandboxStopped
from ragloom_app.db.models import Source, SourceStatus

__all__ = [
    "GAVE_UP_REASON",
    "MAX_INDEXING_ATTEMPTS",
    "attempt_underway",
    "carried_attempts",
    "start_attempt",
]

logger = logging.getLogger(__name__)

#: Started indexing attempts after which an interrupted source is failed, not retried:
#: the first run and one retry. A file that kills the process (out of memory, a crash in
#: a native library) then takes it down at most twice, instead of at every start.
MAX_INDEXING_ATTEMPTS = 2

#: Why a source is failed once its indexing stopped MAX_INDEXING_ATTEMPTS times.
GAVE_UP_REASON = (
    f"indexing stopped {MAX_INDEXING_ATTEMPTS} times without finishing (the process was "
    "killed or crashed, perhaps out of memory); not tried again: remove the file or add "
    "it again"
)

_UNDERWAY: dict[str, Engine] = {}  # source id -> its database, while this process indexes it
_LOCK = threading.Lock()
_EXIT_HOOK_SET = False


def start_attempt(engine: Engine, source: Source) -> None:
    """Mark ``source`` indexing and count the attempt, in one commit, before any reading.

    Indexing an indexed source again (a repair) counts afresh. A source being removed is
    left alone: the removal wins.
    """
    attempts = 1 if source.status == SourceStatus.INDEXED else Source.attempts + 1
    with Session(engine) as session:
        session.exec(
            update(Source)
            .where(col(Source.id) == source.id, col(Source.status) != SourceStatus.REMOVING)
            .values(
                status=SourceStatus.INDEXING,
                reason=None,
                chunk_count=0,
                attempts=attempts,
                updated_at=datetime.now(UTC),
            )
        )
        session.commit()


def carried_attempts(sources: Sequence[Source], *, since: datetime, owner: str) -> int:
    """The attempts already counted against a content by its ``sources`` that a stopped
    process left ``queued`` or ``indexing``, or that were given up for it
    (:data:`GAVE_UP_REASON`): what the run of a job whose worker died carries over to the
    file it begins again (0 if none). Only sources of the job's ``owner`` made ``since``
    the job was: the job's own runs, not an earlier upload of the content (one given up
    long ago, or another user's), which a new upload tries afresh."""
    left = (SourceStatus.QUEUED, SourceStatus.INDEXING)
    return max(
        (
            source.attempts
            for source in sources
            if source.owner == owner
            and _utc(source.created_at) >= _utc(since)
            and (
                source.status in left
                or (source.status == SourceStatus.FAILED and source.reason == GAVE_UP_REASON)
            )
        ),
        default=0,
    )


def _utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC time (SQLite gives times back without their zone)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@contextlib.contextmanager
def attempt_underway(engine: Engine, source_id: str) -> Iterator[None]:
    """Within the block this process indexes ``source_id``; a clean stop takes it back.

    ``KeyboardInterrupt``, ``SystemExit`` or the readers sandbox stopping under the file
    (:class:`~ragloom.sandbox.SandboxStopped`: the app shuts down) takes the attempt back
    before it goes on, and so does the exit of the interpreter while the block still runs
    in another thread;
    anything else (the file's own failure, and a death, which raises nothing) keeps it.
    """
    global _EXIT_HOOK_SET
    with _LOCK:
        _UNDERWAY[source_id] = engine
        if not _EXIT_HOOK_SET:
            atexit.register(_take_back_underway)
            _EXIT_HOOK_SET = True
    try:
        yield
    except (KeyboardInterrupt, SystemExit, SandboxStopped):
        _take_back(engine, source_id)
        raise
    finally:
        with _LOCK:
            _UNDERWAY.pop(source_id, None)


def _take_back(engine: Engine, source_id: str) -> None:
    """Count one attempt less for a source still ``indexing`` (a stop, not a crash)."""
    try:
        with Session(engine) as session:
            session.exec(
                update(Source)
                .where(
                    col(Source.id) == source_id,
                    col(Source.status) == SourceStatus.INDEXING,
                    col(Source.attempts) > 0,
                )
                .values(attempts=Source.attempts - 1)
            )
            session.commit()
        logger.info("indexing %s was stopped; the attempt is not counted", source_id)
    except Exception:
        # The process is stopping: at worst the stop counts as one attempt.
        logger.warning("could not take back the attempt of %s", source_id, exc_info=True)


def _take_back_underway() -> None:
    """At exit: take back the attempts still running in background threads."""
    with _LOCK:
        underway = list(_UNDERWAY.items())
        _UNDERWAY.clear()
    for source_id, engine in underway:
        _take_back(engine, source_id)
