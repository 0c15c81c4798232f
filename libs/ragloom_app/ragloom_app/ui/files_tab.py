"""The Files tab: upload files into an index, follow the indexing, list the index's files,
and manage the indices (:mod:`ragloom_app.ui.indices_panel`).

Gradio hands uploads over as temporary paths whose base name is the name the user's
file had; that name is what the index records and shows (``names=``), never the
temporary path. Those temporary copies (in gradio's upload cache, a folder of the data
folder) are deleted once the files are staged for their indexing job
(:mod:`ragloom_app.jobs`), whose progress the page follows until it ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.errors import UserFacingError, scrub, user_error
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.manager import UnknownIndexError
from ragloom_app.jobs import JobView
from ragloom_app.jobs.turns import places_ahead
from ragloom_app.ui import file_filter, notify, render
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.indices_panel import IndicesPanel, build_indices_panel

__all__ = [
    "UPLOADS_FOLLOWED_AT_ONCE",
    "FilesHandlers",
    "FilesTab",
    "build_files_tab",
    "discard_upload_copies",
]

logger = logging.getLogger(__name__)

_FOLLOW_EVERY = 0.1  # seconds between two looks at a job the page follows
UPLOADS_FOLLOWED_AT_ONCE = 8
"""Uploads whose jobs pages follow at once (each holds a thread that mostly sleeps); more
wait in the queue, their jobs not yet made."""


def _upload_path(item: Any) -> Path:
    """The path of one uploaded file: gradio's file data (a dict), a file object or a path."""
    if isinstance(item, dict):
        return Path(item["path"])
    return Path(getattr(item, "name", item))


def discard_upload_copies(paths: Sequence[Path], upload_cache: Path | None) -> int:
    """Delete the files of ``paths`` that are in ``upload_cache``; returns how many.

    A path elsewhere (a user's own file, given through the API or a test) is never
    touched. Gradio keeps each upload in a folder of its own (named by its hash): that
    folder goes too once empty.
    """
    if upload_cache is None:
        return 0
    cache = upload_cache.resolve()
    removed = 0
    for path in paths:
        folder = path.parent.resolve()
        if not folder.is_relative_to(cache):
            continue
        try:
            (folder / path.name).unlink(missing_ok=True)
            removed += 1
            if folder != cache:
                folder.rmdir()  # only if empty: another upload of the same bytes may share it
        except OSError as exc:
            logger.debug("kept the upload copy %s: %s", path, exc)
    return removed


class FilesHandlers:
    """What the Files tab's events do; every method returns values for gradio outputs.

    Each acts for the user of its ``gr.Request``: it lists the indices that user may read
    and adds files only to one it may write. An index it may not read is, to it, unknown.

    ``upload_cache`` is gradio's upload folder: the copies there are deleted once indexed.
    ``max_files`` bounds the files of one upload (``MAX_FILES_PER_UPLOAD``).
    """

    def __init__(
        self, app: BaseApp, upload_cache: Path | None = None, max_files: int | None = None
    ) -> None:
        self.app = app
        self.upload_cache = upload_cache
        self.max_files = max_files if max_files is not None else app.settings.max_files_per_upload

    def index_names(self, user_id: str) -> list[str]:
        """The names of the indices ``user_id`` may read, oldest first."""
        return [index.name for index in self.app.indices.readable_by(user_id)]

    def _index(self, name: str | None, user_id: str) -> BaseIndex:
        readable = self.app.indices.readable_by(user_id)
        if name:
            for index in readable:
                if index.name == name:
                    return index
            raise UnknownIndexError(f"no index named {name!r}")
        if not readable:
            raise notify.error("There is no index: create one under Manage indices.")
        return readable[0]

    def file_list(self, index_name: str | None, request: gr.Request | None = None) -> str:
        """The files table of an index the user may read."""
        user = ui_user(self.app, request)
        try:
            index = self._index(index_name, user.id)
            return render.sources_html(index.list_sources(), index.name)
        except gr.Error:
            raise
        except KeyError as exc:  # deleted since the page loaded, or never the user's
            notify.warn(scrub(str(exc)))
            return render.sources_html([])
        except Exception as exc:
            failure = user_error(exc, "Listing the files", log=logger)
            notify.warn(failure.message)
            return render.sources_html([])

    def on_load(self, current: str | None, request: gr.Request | None = None) -> tuple[Any, str]:
        """On page load: the user's indices (one may have been created since) and the file
        list."""
        names = self.index_names(ui_user(self.app, request).id)
        selected = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=selected), self.file_list(selected, request)

    def index_files(
        self,
        index_name: str | None,
        files: Sequence[Any] | None,
        request: gr.Request | None = None,
        progress: gr.Progress = gr.Progress(),  # noqa: B008 - gradio injects it by default value
    ) -> tuple[str, str, Any]:
        """Index the uploaded files into an index the user may write, showing per-file
        progress, then each file's outcome."""
        user = ui_user(self.app, request)
        if not files:
            notify.warn("Choose one or more files first.")
            return gr.skip(), gr.skip(), gr.skip()
        paths = [_upload_path(item) for item in files]
        names = [path.name for path in paths]
        if len(paths) > self.max_files:
            # The copies stay: the upload box still holds the files, and pressing "Index"
            # again with fewer of them must find them (gradio's cache drops them in a day).
            raise notify.error(
                f"Too many files in one upload: {len(paths)}. The limit is {self.max_files} "
                "files (MAX_FILES_PER_UPLOAD): add them in smaller batches, or a whole folder "
                "with `ragloom index add FOLDER`."
            )
        try:
            index = self._index(index_name, user.id)
        except KeyError as exc:  # the index was deleted since the page loaded
            raise notify.error(scrub(str(exc))) from exc
        if not self.app.indices.access(index).writable_by(user.id, user.is_admin):
            raise notify.error(
                f"The index {index.name!r} is shared with you to search, not to change: "
                "add the files to an index of your own."
            )
        try:
            job = self.app.jobs.submit_files(
                index, user.id, list(zip(names, paths, strict=True)), move=False
            )
        except UserFacingError as exc:  # too many jobs queued, no room to stage the files
            raise notify.error(str(exc)) from exc
        # The job has its own copies now; the upload box's are let go below.
        discard_upload_copies(paths, self.upload_cache)
        job = self._follow(job, progress)
        if job.status == JobStatus.FAILED:
            raise notify.error(f"Indexing into {index.name!r} failed: {job.error}")
        if job.status == JobStatus.CANCELLED:
            notify.warn("Indexing was cancelled; the files indexed before stay in the index.")
        outcomes = job.outcomes
        failed = [o for o in outcomes if o["status"] == "failed"]
        if failed:
            unlisted = job.outcomes_not_listed  # past the most a job records
            of = f"the first {len(outcomes)} of {job.files_done}" if unlisted else job.files_done
            notify.warn(f"{len(failed)} of {of} files could not be indexed.")
        # Clear the upload box so the next upload starts empty.
        listing = self.file_list(index.name, request)
        return render.outcomes_html(outcomes), listing, gr.update(value=None)

    def _follow(self, job: JobView, progress: gr.Progress) -> JobView:
        """Show the job's place in the queue, then each file as it is done, until it ends.

        The page polls the job's row; a file finished between two looks is still shown
        (in order), so a quick job reads file by file as a slow one does."""
        shown = 0
        while True:
            total = max(job.files_total, len(job.outcomes), 1)
            for outcome in job.outcomes[shown:]:
                shown += 1
                progress(shown / total, desc=f"{outcome['file']}: {shown} of {total} files done")
                # Gradio sends the latest progress only: give each file's its moment.
                time.sleep(_FOLLOW_EVERY)
            if job.finished:
                return job
            if job.status == JobStatus.QUEUED:
                ahead = places_ahead(self.app.engine, job.id)
                waiting = f"{ahead} job{'s' if ahead != 1 else ''} ahead" if ahead else "next"
                progress(0.0, desc=f"Waiting its turn to be indexed: {waiting}…")
            elif job.current:
                progress(job.fraction, desc=f"{job.current}: indexing…")
            time.sleep(_FOLLOW_EVERY)
            job = self.app.jobs.store.get(job.id) or job

    def cancel_indexing(self, index_name: str | None, request: gr.Request | None = None) -> None:
        """Cancel the user's jobs on the index: queued ones at once, a running one after
        the file it is on."""
        user = ui_user(self.app, request)
        try:
            index = self._index(index_name, user.id)
        except KeyError as exc:
            raise notify.error(scrub(str(exc))) from exc
        active = [
            job for job in self.app.jobs.jobs(user.id, active_only=True) if job.index_id == index.id
        ]
        if not active:
            notify.info("Nothing is being indexed into this index.")
            return
        for job in active:
            self.app.jobs.cancel(job.id, user.id)
        notify.info(
            f"Cancelling {len(active)} indexing job{'s' if len(active) != 1 else ''}: "
            "the file being indexed finishes first."
        )

    def after_indexing(
        self, filter_values: list[str] | None, request: gr.Request | None = None
    ) -> Any:
        """The chat's file filter with the files just indexed."""
        return file_filter.filter_update(self.app, filter_values, ui_user(self.app, request).id)


@dataclass
class FilesTab:
    """The components of the Files tab."""

    index: gr.Dropdown
    upload: gr.File
    index_button: gr.Button
    cancel_button: gr.Button
    results: gr.HTML
    file_list: gr.HTML
    refresh: gr.Button
    indices: IndicesPanel


def build_files_tab(demo: gr.Blocks, app: BaseApp, chat_filter: gr.Dropdown) -> FilesTab:
    """Lay out the Files tab inside the current ``gr.Tab`` and wire its events.

    ``chat_filter`` is the Chat tab's file filter, refreshed when files or indices change.
    """
    handlers = FilesHandlers(app)
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=320):
            # Filled when the page loads, with the user's own indices.
            index = gr.Dropdown(
                choices=[],
                value=None,
                label="Index",
                info="The collection the files go into and questions search.",
                elem_id="index-selector",
                filterable=False,
            )
            # No file_types filter on purpose: an unsupported file should come back with
            # its reason in the results rather than vanish in the browser.
            upload = gr.File(
                label="Files to add",
                file_count="multiple",
                elem_id="upload",
                height=180,
            )
            handlers.upload_cache = Path(upload.GRADIO_CACHE)
            with gr.Row():
                index_button = gr.Button("Index", variant="primary", elem_id="index-button")
                cancel_button = gr.Button(
                    "Cancel", variant="stop", scale=0, min_width=90, elem_id="cancel-indexing"
                )
            gr.Markdown("### Results", elem_classes="rl-panel-title")
            results = gr.HTML(
                '<div class="rl-empty">Each file\'s outcome appears here after indexing.</div>',
                elem_id="index-results",
                min_height=120,
            )
        with gr.Column(scale=3, min_width=420):
            with gr.Row(equal_height=True):
                gr.Markdown("### Files in this index", elem_classes="rl-panel-title")
                refresh = gr.Button(
                    "Refresh", size="sm", scale=0, min_width=90, elem_id="refresh-files"
                )
            file_list = gr.HTML(render.sources_html([]), elem_id="file-list")
    indices = build_indices_panel(
        demo,
        app,
        index_selector=index,
        file_list=file_list,
        file_list_fn=handlers.file_list,
        chat_filter=chat_filter,
    )

    # Each upload becomes a job the workers run; its event only follows it. Followed in
    # a slot of their own, so that one user's long upload neither holds up another's nor
    # the creating and deleting of indices (which the jobs' checks keep apart from it).
    indexing = index_button.click(
        handlers.index_files,
        inputs=[index, upload],
        outputs=[results, file_list, upload],
        concurrency_limit=UPLOADS_FOLLOWED_AT_ONCE,
        concurrency_id="uploads",
        api_name="index_files",
        # One progress bar, where the outcome will appear, not one over every output.
        show_progress_on=results,
        # The upload's paths as gradio stored them: gr.File's preprocessing would leave an
        # empty temporary file behind in the upload cache for every file (gradio 6.31).
        preprocess=False,
    )
    indexing.then(
        handlers.after_indexing,
        inputs=chat_filter,
        outputs=chat_filter,
        api_visibility="private",
        show_progress="hidden",
    ).then(indices.handlers.table, outputs=indices.table, api_visibility="private")
    cancel_button.click(
        handlers.cancel_indexing, inputs=index, api_visibility="private", show_progress="hidden"
    )
    for trigger in (index.input, refresh.click):
        trigger(handlers.file_list, inputs=index, outputs=file_list, api_visibility="private")
    demo.load(handlers.on_load, inputs=index, outputs=[index, file_list], api_visibility="private")
    return FilesTab(
        index, upload, index_button, cancel_button, results, file_list, refresh, indices
    )
