"""Which hosts the UI serves and answers to: loopback, or any address once login is on.

Two checks, both against a web page on another site driving the local app through the
user's browser:

- DNS rebinding: a page at ``http://evil.example`` re-points its own name at 127.0.0.1
  and then reads the app as if it were its own site. The browser still sends
  ``Host: evil.example``, so :class:`HostGuard` refuses a Host that is neither loopback
  nor a name the admin allowed.
- Cross-site requests: any page may POST a form (an upload, for one) to
  ``http://127.0.0.1:7860`` without reading the answer, and gradio answers the reads of a
  page at any other port of ``localhost`` with CORS headers that let it read them. Browsers
  name the page's origin in ``Origin`` on every such request (and never on a page's own
  navigation and reads), so a request whose ``Origin`` is not the app's own address, or a
  name the admin allowed (``ALLOWED_HOSTS``, a reverse proxy's), is refused, whatever its
  method.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ragloom_app.web.refusals import refusal as refused

__all__ = ["LOOPBACK_NAMES", "HostGuard", "UnsafeHostError", "check_serving_host", "is_loopback"]

LOOPBACK_NAMES = frozenset({"localhost"})
"""Names that always mean this machine (besides the 127.0.0.0/8 and ::1 addresses)."""

# A Host header is a name or an address, maybe bracketed (IPv6), maybe with a port.
_HOST_HEADER = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
_SHOWN = 80  # characters of a refused Host or Origin repeated in the refusal


class UnsafeHostError(ValueError):
    """The UI was asked to listen on an address other machines can reach."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is loopback.

    Only ``localhost`` and loopback addresses count; another name is not resolved, since
    what it resolves to can change after the check.
    """
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def check_serving_host(host: str, *, login_required: bool, accounts: int) -> None:
    """Raise :class:`UnsafeHostError`, saying why and what to do, unless the UI can serve
    ``host`` with ``accounts`` enabled accounts.

    Loopback without login is the laptop's case and always fine. Any other address
    requires login (the server turns it on), and login needs an account to log in with.
    """
    if not login_required and is_loopback(host):
        return
    if accounts > 0:
        return
    why = (
        f"serving on {host!r} requires login (anyone who can reach that address could "
        "otherwise read every conversation and file)"
        if not is_loopback(host)
        else "login is required (REQUIRE_LOGIN)"
    )
    raise UnsafeHostError(
        f"{why}, but no account can log in yet: create the first one with "
        "`ragloom users add NAME --admin`. Or serve on 127.0.0.1 (the default), without "
        "login, and reach it from another computer through an SSH tunnel "
        "(ssh -L 7860:127.0.0.1:7860 THIS-COMPUTER, then open http://127.0.0.1:7860)."
    )


def _host_name(header: str | None) -> str | None:
    """The host of a Host header, lower-case and without brackets or port; None if invalid."""
    if not header or not _HOST_HEADER.fullmatch(header):
        return None
    try:
        return urlsplit(f"//{header}").hostname
    except ValueError:
        return None


def _normal_name(host: str) -> str:
    """``host`` as :func:`_host_name` gives it, or lower-case without brackets."""
    return _host_name(host) or host.strip("[]").lower()


def _shown(text: str) -> str:
    text = text[:_SHOWN] + ("…" if len(text) > _SHOWN else "")
    return ascii(text)


class HostGuard:
    """ASGI middleware: refuse a foreign ``Host`` (400) and a cross-site request (403).

    ``allowed_hosts`` are names accepted as ``Host`` besides loopback ones (the host the UI
    listens on, ``ALLOWED_HOSTS``); ``allowed_origins`` names whose pages may send requests
    besides the app's own address (``ALLOWED_HOSTS``: a proxy that rewrites ``Host``). A
    request without ``Origin`` (the page's own, a script, ``curl``) is not a browser sent
    there by another page, so only the Host check applies to it.
    """

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Collection[str] = (),
        allowed_origins: Collection[str] = (),
    ) -> None:
        self.app = app
        self.allowed = frozenset(_normal_name(h) for h in allowed_hosts)
        self.origins = frozenset(_normal_name(h) for h in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host_header = headers.get("host", "")
        port = (scope.get("server") or ("", 7860))[1]
        refusal = self._check_host(host_header, port)
        if refusal is None:
            refusal = self._check_origin(headers.get("origin"), host_header)
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal[1][:120]})
        else:
            status, message = refusal
            await refused(str(scope["path"]), status, message)(scope, receive, send)

    def _check_host(self, header: str, port: int | None) -> tuple[int, str] | None:
        name = _host_name(header)
        if name is not None and (name in self.allowed or is_loopback(name)):
            return None
        names = ", ".join(sorted({*self.allowed, *LOOPBACK_NAMES, "127.0.0.1", "[::1]"}))
        return 400, (
            f"Refused: this request is addressed to host {_shown(header)}, and Ragloom answers "
            f"only to {names}. A web page on another site could otherwise use its own name "
            f"to drive this app (DNS rebinding). Open Ragloom at http://127.0.0.1:{port}/, or add "
            "the name to ALLOWED_HOSTS in the settings if a reverse proxy forwards it."
        )

    def _check_origin(self, origin: str | None, host_header: str) -> tuple[int, str] | None:
        if origin is None:
            return None
        try:
            parts = urlsplit(origin)
            web = parts.scheme in ("http", "https")
            same = web and parts.netloc.lower() == host_header.lower()
            # An allowed name is a proxy's public address: its own default port only, and
            # never a loopback name (every page on every port of this machine has one).
            name = parts.hostname or ""
            allowed = web and parts.port is None and name in self.origins
            allowed = allowed and not is_loopback(name)
        except ValueError:
            same = allowed = False
        if same or allowed:
            return None
        return 403, (
            f"Refused: this request was sent by a page at {_shown(origin)}, not by Ragloom's "
            "own page. Another site (another port of this machine included) cannot read, "
            "upload, ask or change anything here; use Ragloom from its own address."
        )
