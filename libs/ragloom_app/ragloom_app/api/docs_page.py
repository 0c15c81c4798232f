"""The API's interactive docs, ``/docs``: Swagger UI served from the app itself.

FastAPI's own docs page loads Swagger UI from a CDN; an offline app cannot, and a page of
ours must load nothing remote (the Content-Security-Policy forbids it). The
``swagger-ui-bundle`` package ships Swagger UI's files, served here from an allowlist.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from ragloom_app.api.errors import not_found

__all__ = ["ASSETS_PATH", "docs_router"]

ASSETS_PATH = "/docs-assets"
_ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")


def _assets_dir() -> Path:
    import swagger_ui_bundle

    return Path(swagger_ui_bundle.swagger_ui_path)


def docs_router(openapi_url: str = "/openapi.json") -> APIRouter:
    """``/docs`` and the files it loads."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title="Ragloom API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
        )

    @router.get(ASSETS_PATH + "/{name}")
    def asset(name: str) -> FileResponse:
        if name not in _ASSETS:
            raise not_found("file", name)
        return FileResponse(_assets_dir() / name)

    return router
