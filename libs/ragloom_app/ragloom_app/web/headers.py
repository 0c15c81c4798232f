"""Security headers on every response, and the Content-Security-Policy of the page.

The policy lets the page load scripts, styles, fonts and images from the app alone:
nothing remote, no frames, and the page cannot be framed. What gradio 6 needs of it,
found by running the UI in chromium and reading every violation it reported:

- ``script-src 'unsafe-eval'``: ``gr.HTML`` renders its value through a template
  compiled with ``Function(...)``; without it every HTML panel stays empty.
- the page's inline ``<script>`` elements (gradio's config and boot code) are allowed
  by their sha256 hashes, computed from the page as it is sent, so an inline script or
  ``onerror=`` handler that model output smuggles into the DOM later does not run;
- ``style-src 'unsafe-inline'``: svelte sets ``style=`` attributes and gradio injects
  the theme's ``<style>`` elements at run time (styles load nothing: ``img-src`` and
  ``font-src`` still bound what a ``url(...)`` may fetch);
- ``img-src data:``: gradio's icons (radio buttons, the footer's) are data: URLs.

Nothing else was needed (fonts come from the app, no media, workers or frames); each
allowance above was checked by removing it and seeing the UI break in chromium.

Hashing needs the page's HTML as written, so requests reach gradio without
``Accept-Encoding`` (gradio would compress it; over loopback that only costs CPU).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Collection

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "SecurityHeaders", "page_policy"]

CONTENT_SECURITY_POLICY: dict[str, str] = {
    # Anything not named below (media, frames, objects) loads nothing.
    "default-src": "'none'",
    # Workers would fall back to script-src ('self'); the UI starts none.
    "worker-src": "'none'",
    "script-src": "'self' 'unsafe-eval'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "manifest-src": "'self'",
    "frame-src": "'none'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
"""The policy's directives; :func:`page_policy` adds the hashes of the page's scripts."""

SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    # No address of the app's in a request to another site (a link in an answer). Not
    # "no-referrer": under it chromium sends "Origin: null" with the page's own form
    # posts (login, logout), which the host guard must refuse as any other site's.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    # Another site's page may not embed (and so read, through side channels) a response.
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    # Links in answers may point anywhere; the browser must not look their hosts up in
    # DNS before anyone clicks (a lookup tells a planted document's server it was shown).
    "X-DNS-Prefetch-Control": "off",
}
"""Sent with every response, besides ``Content-Security-Policy``."""

_INLINE_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_SRC_ATTRIBUTE = re.compile(rb"\bsrc\s*=", re.IGNORECASE)


def page_policy(html: bytes = b"") -> str:
    """The Content-Security-Policy header value for ``html`` (no page: no script hashes)."""
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii") + "'"
        for attributes, body in _INLINE_SCRIPT.findall(html)
        if not _SRC_ATTRIBUTE.search(attributes)
    ]
    directives = dict(CONTENT_SECURITY_POLICY)
    if hashes:
        directives["script-src"] += " " + " ".join(dict.fromkeys(hashes))
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class SecurityHeaders:
    """ASGI middleware: add :data:`SECURITY_HEADERS` and the policy to every response.

    The page (an HTML response at one of ``page_paths``) is held until complete, one body
    of a few hundred KB, so its inline scripts can be hashed. Every other response streams
    through with the policy and no hash: an HTML file that gradio would serve elsewhere
    runs no inline script.
    """

    def __init__(self, app: ASGIApp, page_paths: Collection[str] = ("/",)) -> None:
        self.app = app
        self.page_paths = frozenset(page_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        scope["headers"] = [
            (name, value) for name, value in scope["headers"] if name != b"accept-encoding"
        ]
        is_page = scope["path"] in self.page_paths
        start: Message | None = None
        body: list[bytes] = []

        async def send_with_headers(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                # Gradio grants any localhost origin CORS reads; Ragloom's page needs none.
                for name in [n for n in headers if n.startswith("access-control-")]:
                    del headers[name]
                if is_page and headers.get("content-type", "").startswith("text/html"):
                    start = message  # sent with the whole body, once it is hashed
                    return
                headers["Content-Security-Policy"] = page_policy()
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                html = b"".join(body)
                headers = MutableHeaders(scope=start)
                headers["Content-Security-Policy"] = page_policy(html)
                if "content-length" in headers:
                    headers["Content-Length"] = str(len(html))
                await send(start)
                message = {"type": "http.response.body", "body": html, "more_body": False}
            await send(message)

        await self.app(scope, receive, send_with_headers)
