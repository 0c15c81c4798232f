"""Create, load and delete the indices of the app (the rules of names and access:
:mod:`ragloom_app.index.rules`, whose names this module gives too)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom.loaders import FileReader, default_readers
from ragloom_app.db.models import LOCAL_USER, IndexRecord
from ragloom_app.errors import user_error
from ragloom_app.index.base import BaseIndex, IndexResources
from ragloom_app.index.rules import (
    INDEX_NAME_PATTERN,
    MAX_INDEX_NAME_CHARS,
    IndexAccess,
    IndexNameError,
    UnknownIndexError,
    checked_index_name,
    new_store_name,
)
from ragloom_app.jobs.store import JobStore
from ragloom_app.settings import SettingsError

__all__ = [
    "INDEX_NAME_PATTERN",
    "MAX_INDEX_NAME_CHARS",
    "START_RETRY_SECONDS",
    "IndexAccess",
    "IndexManager",
    "IndexNameError",
    "UnknownIndexError",
    "new_store_name",
]

START_RETRY_SECONDS = 10.0
"""How long after an index failed to start :meth:`IndexManager.refresh` starts it again
(its store may have been away for a moment): every listing of the indices refreshes, and
a start that fails may first wait out a server's timeout."""

logger = logging.getLogger(__name__)


def _same_index(live: BaseIndex, record: IndexRecord) -> bool:
    """Whether ``record`` is the index ``live`` was started from (not a later one given
    its id): an index keeps its store's name and its own name for life."""
    return live.name == record.name and live.resources.store_name == record.store_name


class IndexManager:
    """Holds the index types and one live object per index in the database.

    ``readers`` are the app's file readers by extension (built-in and plugins'): index
    types whose settings depend on them (the file types of a file index) get them.
    An index whose type is not registered (its plugin was uninstalled, or failed to
    load), or whose type fails to create or start it, is left out with a warning and
    listed in :attr:`unavailable` with the reason; the other indices start regardless.
    One that failed to start is started again by :meth:`refresh`, at most every
    :data:`START_RETRY_SECONDS`, and is no longer unavailable once it starts.
    """

    def __init__(
        self,
        engine: Engine,
        resources_for: Callable[[int], IndexResources],
        readers: Mapping[str, FileReader] | None = None,
    ) -> None:
        self._engine = engine
        self._resources_for = resources_for
        self.readers: Mapping[str, FileReader] = dict(readers or default_readers())
        self.index_types: dict[str, type[BaseIndex]] = {}
        self.unavailable: dict[str, str] = {}
        self._unavailable_access: dict[str, IndexAccess] = {}
        # Indices (by name) whose start failed, and when: refresh() starts them again.
        self._start_failed_at: dict[str, float] = {}
        self._indices: dict[int, BaseIndex] = {}
        self._access: dict[int, IndexAccess] = {}
        # The indices (id: name) refresh() is starting, outside the lock: no other thread
        # starts them meanwhile, and a get() of one waits for its start (_started).
        self._starting: dict[int, str] = {}
        # When each live index was published here (a count, _generation at the time).
        self._published: dict[int, int] = {}
        self._generation = 0
        # create, delete and refresh change the dicts above from any thread.
        self._lock = threading.RLock()
        self._started = threading.Condition(self._lock)

    @property
    def engine(self) -> Engine:
        """The app database, which holds the indices' rows."""
        return self._engine

    def register_type(self, type_id: str, index_type: type[BaseIndex]) -> None:
        """Make an index type available under ``type_id`` (its dotted path).

        The app registers what its plugin registry holds, which has warned already of a
        type registered twice (:class:`ragloom_app.plugins.registry.Registry`).
        """
        self.index_types[type_id] = index_type

    def admin_settings(self, type_id: str) -> dict[str, dict[str, Any]]:
        """The creation settings of a registered index type, given the app's readers."""
        return self.index_types[type_id].admin_settings_for(self.readers)

    def normalize_config(self, type_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """A new index's config checked by its type; raises ``ValueError`` if it is wrong."""
        return self.index_types[type_id].normalize_config(config, readers=self.readers)

    def start(self, wanted: Sequence[Mapping[str, Any]]) -> None:
        """Create the indices of ``INDICES`` that do not exist yet
        (:func:`~ragloom_app.index.wanted.create_wanted`), then start them all."""
        from ragloom_app.index.wanted import create_wanted

        create_wanted(self, wanted)
        self.refresh()

    def refresh(self) -> None:
        """Bring the live indices in line with the database, which other processes share:
        start the indices they created, forget those they deleted, and take up changes of
        owner or sharing; start again those that failed to start START_RETRY_SECONDS ago
        or more. One small query; every listing of the indices runs it.

        The indices to start are chosen under the lock and started outside it (a start
        may wait out a store server's timeout, and :meth:`get` of every other index takes
        the lock); one being started by another thread is left to it."""
        with self._lock:
            read_at = self._generation
        records = self._records()
        to_start: list[IndexRecord] = []
        with self._lock:
            present = {record.id for record in records}
            # One published after the read began (created here meanwhile) is not gone:
            # the read may have missed its row.
            for gone in [
                key
                for key in self._indices
                if key not in present and self._published.get(key, 0) <= read_at
            ]:
                logger.info("index %r was deleted elsewhere", self._indices[gone].name)
                del self._indices[gone]
                self._access.pop(gone, None)
            for record in records:
                assert record.id is not None
                access = IndexAccess(record.owner, record.shared)
                live = self._indices.get(record.id)
                if live is not None and not _same_index(live, record):
                    # Deleted elsewhere and its id given to a new index since the last look.
                    logger.info("index %r was deleted elsewhere", live.name)
                    del self._indices[record.id]
                    live = None
                if live is not None:
                    self._access[record.id] = access
                elif record.id not in self._starting and self._may_start(record, access):
                    self._starting[record.id] = record.name
                    to_start.append(record)
        for position, record in enumerate(to_start):
            try:
                self._start_index(record)
            except BaseException:
                # Not started (a KeyboardInterrupt): free it and those not tried, for
                # the next refresh.
                with self._lock:
                    for left in to_start[position:]:
                        self._starting.pop(left.id or 0, None)
                    self._started.notify_all()
                raise

    def _records(self) -> list[IndexRecord]:
        """Every index's row, by id."""
        with Session(self._engine) as session:
            return list(session.exec(select(IndexRecord).order_by(col(IndexRecord.id))))

    def _publish(self, index_id: int, index: BaseIndex, access: IndexAccess) -> None:
        """Make a started index live here (under the lock), noting when for refresh()."""
        self._generation += 1
        self._published[index_id] = self._generation
        self._indices[index_id] = index
        self._access[index_id] = access

    def _may_start(self, record: IndexRecord, access: IndexAccess) -> bool:
        """Whether to start the index of ``record`` now: one not tried yet whose type is
        registered, or one whose start failed START_RETRY_SECONDS ago or more. One whose
        type is not registered stays out: the plugins are loaded once, as the app starts."""
        failed_at = self._start_failed_at.get(record.name)
        if failed_at is not None:
            return time.monotonic() - failed_at >= START_RETRY_SECONDS
        return record.name not in self.unavailable and self.type_registered(
            record.name, record.index_type, access
        )

    def type_registered(self, name: str, type_id: str, access: IndexAccess | None = None) -> bool:
        """Whether ``type_id`` is registered; if not, the index is left out with the reason."""
        if type_id in self.index_types:
            return True
        reason = f"its type {type_id} is not registered"
        logger.warning("index %r left out: %s (a plugin missing?)", name, reason)
        self.leave_out(name, reason, access)
        return False

    def leave_out(self, name: str, reason: str, access: IndexAccess | None) -> None:
        """List the index ``name`` in :attr:`unavailable`, saying ``reason``, with who may
        see it (``None``: an index of ``INDICES``)."""
        self.unavailable[name] = reason
        # An index of INDICES is the local user's, shared, as when it is made.
        self._unavailable_access[name] = access or IndexAccess()

    def unavailable_to(self, user_id: str) -> dict[str, str]:
        """The indices left out at startup that ``user_id`` may read, with the reason (the
        names of other users' private indices are theirs)."""
        return {
            name: reason
            for name, reason in self.unavailable.items()
            if self._unavailable_access.get(name, IndexAccess("", False)).readable_by(user_id)
        }

    def _start_index(self, record: IndexRecord) -> None:
        """Build and start one index that :meth:`refresh` marked as starting, outside the
        lock, then publish it under the lock; one that fails is left out, listed in
        :attr:`unavailable` with the error, and the other indices start regardless."""
        access = IndexAccess(record.owner, record.shared)
        assert record.id is not None
        try:
            index = self._instantiate(record)
            index.on_start()
        except Exception as exc:
            with self._lock:
                self._starting.pop(record.id, None)
                self._started.notify_all()
                again = record.name in self._start_failed_at
                self._start_failed_at[record.name] = time.monotonic()
                if again:
                    # Its trace was logged at the first failure, under the reference its
                    # reason carries: not again at every retry of a store that stays away.
                    logger.debug("index %r still fails to start: %r", record.name, exc)
                    self.leave_out(record.name, self.unavailable[record.name], access)
                    return
                failure = user_error(exc, f"Starting the index {record.name!r}", log=logger)
                self.leave_out(record.name, failure.message, access)
            return
        with self._lock:
            self._starting.pop(record.id, None)
            self._started.notify_all()
            if self._start_failed_at.pop(record.name, None) is not None:
                self.unavailable.pop(record.name, None)
                self._unavailable_access.pop(record.name, None)
                logger.info("index %r started, after it had failed to", record.name)
            self._publish(record.id, index, access)

    def _instantiate(self, record: IndexRecord) -> BaseIndex:
        index_type = self.index_types.get(record.index_type)
        if index_type is None:
            raise SettingsError(
                f"index {record.name!r} has type {record.index_type!r}, which is not in "
                f"INDEX_TYPES ({', '.join(self.index_types) or 'none'})"
            )
        assert record.id is not None
        return index_type(
            id=record.id,
            name=record.name,
            config=dict(record.config or {}),
            resources=replace(self._resources_for(record.id), store_name=record.store_name),
        )

    def create(
        self,
        name: str,
        type_id: str,
        config: dict[str, Any] | None = None,
        *,
        owner: str = LOCAL_USER,
        shared: bool = True,
    ) -> BaseIndex:
        """Create a new index of a registered type, owned by ``owner`` (private to it
        unless ``shared``)."""
        if type_id not in self.index_types:
            raise SettingsError(f"unknown index type {type_id!r}")
        name = checked_index_name(name)
        with self._lock:
            return self._create(name, type_id, config, owner, shared)

    def _create(
        self, name: str, type_id: str, config: dict[str, Any] | None, owner: str, shared: bool
    ) -> BaseIndex:
        if name in self.unavailable or any(i.name == name for i in self._indices.values()):
            # Names are the whole app's: the words say it is taken, not whose it is.
            raise IndexNameError(f"the name {name!r} is taken already: choose another")
        record = IndexRecord(
            name=name,
            index_type=type_id,
            config=_with_visibility(config or {}, shared),
            owner=owner,
            shared=shared,
            store_name=new_store_name(),
        )
        with Session(self._engine) as session:
            session.add(record)
            session.commit()
            session.refresh(record)
        index: BaseIndex | None = None
        try:
            index = self._instantiate(record)
            index.on_create()
            index.on_start()
        except Exception:
            # No record of an index that never worked, nor what it had begun to store:
            # the name stays free to try again.
            if index is not None:
                try:
                    index.on_delete()
                except Exception:
                    logger.warning("could not clean up after %r", name, exc_info=True)
            with Session(self._engine) as session:
                session.delete(session.get(IndexRecord, record.id))
                session.commit()
            raise
        assert record.id is not None
        self._publish(record.id, index, IndexAccess(owner, shared))
        logger.info("created index %r (%s)", name, type_id)
        return index

    def share(self, index: BaseIndex, shared: bool = True) -> None:
        """Make ``index`` readable by every user (or, with ``shared=False``, its owner's
        alone), here and, at their next listing, in the other processes."""
        with Session(self._engine) as session:
            record = session.get(IndexRecord, index.id)
            if record is None:
                raise UnknownIndexError(f"no index named {index.name!r}")
            record.shared = shared
            record.config = _with_visibility(dict(record.config or {}), shared)
            session.add(record)
            session.commit()
            owner = record.owner
        with self._lock:
            self._access[index.id] = IndexAccess(owner, shared)
            index.config = _with_visibility(dict(index.config), shared)

    def delete(self, name_or_id: str | int) -> None:
        """Delete an index and everything it stored; its indexing jobs that had not ended
        fail, and none of its jobs points at its id any more (``JobStore.detach_index``)."""
        index = self.get(name_or_id)
        index.on_delete()
        with Session(self._engine) as session:
            # The row first: a job being written for the index holds it (JobStore.create),
            # so the jobs detached after are all there are.
            record = session.get(IndexRecord, index.id)
            if record is not None:
                session.delete(record)
                session.flush()
            JobStore(self._engine).detach_index(index.id, session)
            session.commit()
        with self._lock:
            self._indices.pop(index.id, None)
            self._access.pop(index.id, None)

    def get(self, name_or_id: str | int) -> BaseIndex:
        """The index with that name (or numeric id); the database is read again when it is
        not known here (another process may have created it)."""
        found = self._known(name_or_id)
        if found is None:
            self.refresh()
            found = self._known(name_or_id)
        if found is None and self._wait_for_start(name_or_id):
            found = self._known(name_or_id)
        if found is not None:
            return found
        if name_or_id in self.unavailable:
            reason = self.unavailable[str(name_or_id)]
            raise UnknownIndexError(f"the index {name_or_id!r} is unavailable: {reason}")
        # Never the names of the others: this reaches users (an API delete that lost a
        # race), and some of those indices are private to other users.
        raise UnknownIndexError(f"no index named {name_or_id!r}")

    def _wait_for_start(self, name_or_id: str | int) -> bool:
        """Wait while another thread's :meth:`refresh` starts the index ``name_or_id``;
        whether it was starting."""
        waited = False
        with self._lock:
            while any(
                name == name_or_id or str(index_id) == str(name_or_id)
                for index_id, name in self._starting.items()
            ):
                waited = True
                self._started.wait()
        return waited

    def stored_name(self, index_id: int) -> str | None:
        """The name of the index ``index_id`` as the database has it, whether it is live in
        this process or not (:attr:`unavailable`); ``None`` if there is none (deleted)."""
        with Session(self._engine) as session:
            record = session.get(IndexRecord, index_id)
            return record.name if record is not None else None

    def _known(self, name_or_id: str | int) -> BaseIndex | None:
        with self._lock:
            live = list(self._indices.values())
        for index in live:
            if index.name == name_or_id:
                return index
        for index in live:
            if str(index.id) == str(name_or_id):
                return index
        return None

    @property
    def indices(self) -> list[BaseIndex]:
        """Every live index, oldest first, as the database has them now (:meth:`refresh`)."""
        self.refresh()
        with self._lock:
            return [self._indices[key] for key in sorted(self._indices)]

    def access(self, index: BaseIndex) -> IndexAccess:
        """Who owns ``index`` and whether it is shared."""
        # An index this manager did not start has no known owner: closed to everyone.
        return self._access.get(index.id, IndexAccess(owner="", shared=False))

    def readable_by(self, user_id: str) -> list[BaseIndex]:
        """The live indices ``user_id`` may search, oldest first."""
        return [index for index in self.indices if self.access(index).readable_by(user_id)]


def _with_visibility(config: dict[str, Any], shared: bool) -> dict[str, Any]:
    """``config`` whose ``visibility`` setting, if its type has one, says what ``shared``
    does: the access record decides who reads an index, and the setting shown must agree."""
    if "visibility" in config:
        config["visibility"] = "shared" if shared else "private"
    return config
