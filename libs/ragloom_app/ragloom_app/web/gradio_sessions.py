"""Each gradio page session belongs to the user who opened it: :class:`SessionBinding`.

Gradio names a page's session by a hash the browser makes (``session_hash``) and trusts it:
with it, any logged-in user could read another page's answers as they stream
(``queue/data``), send events into it (``queue/join``), cancel them, or have its state
saved and served back (``deep_link``). So the first user who uses a session hash owns it,
and a request of another user naming it is refused (403). Ragloom uses no deep links:
every deep-link request is refused (404). With login on, a request without a live session
is refused (401) on every gradio route, the few gradio leaves open included (``cancel``,
``reset``, ``heartbeat``). And one user's events waiting in gradio's queue are bounded
(``QUEUE_MAX_PER_USER``), so that the queue's room (``QUEUE_MAX_SIZE``) stays every user's.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloom_app.db.models import LOCAL_USER
from ragloom_app.web.login import UserLookup
from ragloom_app.web.refusals import refusal

__all__ = ["MAX_BOUND_SESSIONS", "MAX_SESSIONS_PER_USER", "SessionBinding", "waiting_events"]

MAX_BOUND_SESSIONS = 50_000
"""Session hashes remembered; past that the least recently used is forgotten."""
MAX_SESSIONS_PER_USER = 1_000
"""Session hashes remembered of one user; past that, that user's least recently used is
forgotten. Without it, one user's made-up sessions could push another's out of the table,
and whoever named that one next would own it."""
_MAX_JSON_BYTES = 256 * 1024
_PREFIX = "/gradio_api/"
_JOIN_PATHS = tuple(_PREFIX + route for route in ("queue/join", "call/"))


class _BodyTooLarge(Exception):
    """A JSON body past ``_MAX_JSON_BYTES``: its session cannot be read, so it is refused."""


class _FormElsewhere(Exception):
    """A form body (``multipart/``) to a route other than the upload's: refused."""


class SessionBinding:
    """ASGI middleware over the gradio mount (see the module docstring).

    ``user_id`` names a request's user (``None``: it must log in), as the gradio mount's
    ``auth_dependency`` does.
    """

    def __init__(
        self,
        app: ASGIApp,
        user_id: UserLookup,
        waiting: Callable[[str], int] | None = None,
        max_waiting_per_user: int = 8,
    ) -> None:
        self.app = app
        self.user_id = user_id
        self.waiting = waiting
        self.max_waiting = max_waiting_per_user
        # Joins on their way into gradio's queue, by user: not yet among its waiting events.
        self._joining: dict[str, int] = {}
        self._owners: OrderedDict[str, str] = OrderedDict()
        # Each user's sessions, least recently used first (the same order as _owners).
        self._by_user: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        request = Request(scope)
        if "deep_link" in request.query_params or path.startswith(_PREFIX + "deep_link"):
            await refusal(path, 404, "deep links are not served")(scope, receive, send)
            return
        if not path.startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        user = await self.user_id(request)
        if user is None:
            await refusal(path, 401, "log in first")(scope, receive, send)
            return
        try:
            sessions, receive = await self._session_hashes(scope, request, receive)
        except _BodyTooLarge:
            # Not passed on unread: gradio would act on a session this did not check.
            refused = refusal(path, 413, f"a JSON body is {_MAX_JSON_BYTES} bytes at most")
            await refused(scope, receive, send)
            return
        except _FormElsewhere:
            # Gradio reads a session from a form's fields too (component_server), which
            # this does not parse; Ragloom's page sends forms to the upload route alone.
            refused = refusal(path, 415, "a form body is taken by the upload route only")
            await refused(scope, receive, send)
            return
        # Every hash the request names is checked: gradio reads the body's on some routes
        # and the query's on others, so one of this user's in the query must not carry
        # another's in the body.
        if not all([self._bind(session, user) for session in sessions]):
            await refusal(path, 403, "that page session is another user's")(scope, receive, send)
            return
        # Every route that puts an event in gradio's queue (the page's queue/join, and the
        # API's call/; its run/ and api/ are closed, api_open=False); the local user, who
        # is everyone without login, unbounded.
        joins = scope["method"] == "POST" and path.startswith(_JOIN_PATHS)
        if not joins or self.waiting is None or user == LOCAL_USER:
            await self.app(scope, receive, send)
            return
        # Counted and let in with no await between: joins sent together see each other.
        with self._lock:
            waiting = self.waiting(user) + self._joining.get(user, 0)
            if waiting < self.max_waiting:
                self._joining[user] = self._joining.get(user, 0) + 1
        if waiting >= self.max_waiting:
            words = f"{self.max_waiting} of your requests are waiting already: let them end"
            await refusal(path, 429, words)(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                self._joining[user] -= 1
                if not self._joining[user]:
                    del self._joining[user]

    def _bind(self, session: str, user: str) -> bool:
        """Whether ``session`` is ``user``'s (binding it now if nobody used it yet)."""
        with self._lock:
            owner = self._owners.get(session)
            if owner is None:
                mine = self._by_user.setdefault(user, OrderedDict())
                if len(mine) >= MAX_SESSIONS_PER_USER:
                    self._forget(next(iter(mine)))  # this user's own oldest, not another's
                self._owners[session] = user
                self._by_user[user][session] = None
                while len(self._owners) > MAX_BOUND_SESSIONS:
                    self._forget(next(iter(self._owners)))
                return True
            self._owners.move_to_end(session)
            self._by_user[owner].move_to_end(session)
            return owner == user

    def _forget(self, session: str) -> None:
        """Forget who owns ``session`` (under the lock)."""
        user = self._owners.pop(session)
        mine = self._by_user[user]
        del mine[session]
        if not mine:
            del self._by_user[user]

    async def _session_hashes(
        self, scope: Scope, request: Request, receive: Receive
    ) -> tuple[list[str], Receive]:
        """Every session hash the request names (in its query, its path, its body), and
        the ``receive`` to pass on (the body replayed if it was read).

        A body is read as JSON whatever its content type says (gradio parses some that
        are labelled ``text/plain``); a form (``multipart/``) is the upload route's alone,
        elsewhere :class:`_FormElsewhere`.
        """
        named = [h for h in request.query_params.getlist("session_hash") if h]
        parts = scope["path"][len(_PREFIX) :].split("/")
        if parts[0] == "heartbeat" and len(parts) > 1 and parts[1]:
            named.append(parts[1])
        if parts[0] == "stream" and len(parts) >= 4 and parts[1]:  # a media stream's
            named.append(parts[1])
        content_type = request.headers.get("content-type", "").lower()
        if content_type.startswith("multipart/"):
            if scope["path"].startswith(_PREFIX + "upload"):
                return named, receive  # files, no session: read by gradio as they stream
            raise _FormElsewhere
        if scope["method"] != "POST":
            return named, receive
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > _MAX_JSON_BYTES:
                raise _BodyTooLarge
        replayed: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return replayed.pop(0) if replayed else await receive()

        try:
            value = json.loads(body) if body else None
        except (ValueError, RecursionError):  # gradio refuses it too: nothing to bind
            value = None
        session = value.get("session_hash") if isinstance(value, dict) else None
        if isinstance(session, str) and session:
            named.append(session)
        return named, replay


def waiting_events(demo: Any, user: str) -> int:
    """How many of ``user``'s events wait in the gradio queue of ``demo`` (its ``username``
    is the user's id, as the mount's ``auth_dependency`` gave it). Read from gradio's
    queue itself, which alone knows when an event starts or is dropped."""
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return 0
    lines = list(queue.event_queue_per_concurrency_id.values())
    return sum(1 for line in lines for event in list(line.queue) if event.username == user)
