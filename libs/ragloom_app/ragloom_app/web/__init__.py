"""The HTTP layer: one FastAPI app with the gradio UI mounted, run by uvicorn.

- :mod:`.asgi`: the app, its guards and the mounted UI (imports gradio: import it only
  after :func:`ragloom_app.privacy.switch_off_telemetry`, as ``ui.server`` does);
- :mod:`.server`: uvicorn in a thread;
- :mod:`.hosts`: loopback without login, any address with it; Host and Origin checks;
- :mod:`.login`: the login page, logout, and who each UI request acts for;
- :mod:`.gradio_sessions`: each gradio page session bound to its user;
- :mod:`.headers`: the Content-Security-Policy and other headers;
- :mod:`.requests`: no fetching of URLs for anyone, bounded bodies.

The limits are settings (``ragloom_app.settings.AppSettings``): ``MAX_FILE_BYTES``,
``MAX_FILES_PER_UPLOAD``, ``MAX_UPLOAD_REQUEST_BYTES``, ``MIN_FREE_DISK_BYTES``,
``MAX_REQUEST_BYTES``, ``QUEUE_MAX_SIZE`` and ``ALLOWED_HOSTS``.
"""
