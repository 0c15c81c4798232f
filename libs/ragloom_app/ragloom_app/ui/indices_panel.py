"""The Files tab's "Manage indices" section: list, create and delete indices.

It acts for the user of each event's ``gr.Request``: the table lists the indices that user
may read, with each one's owner and whether it is shared; a new index is the user's,
private unless its visibility says shared (which only an admin, or the local user of a
server without login, may choose: every user's questions search it); only an index the
user may write can be deleted.

The creation form is built from the index type's admin settings for the app's file
readers (so a plugin's file types are offered); the type's ``normalize_config`` checks
the values before the index is made. Deleting asks for a confirmation first. After
either, every index selector of the page is refreshed: the Files tab's, the delete
selector and the chat's file filter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from ragloom_app.accounts import User
from ragloom_app.api.auth import LOCAL
from ragloom_app.app import BaseApp
from ragloom_app.errors import scrub, user_error
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.deletion import deletion_refused
from ragloom_app.index.manager import IndexNameError, UnknownIndexError
from ragloom_app.ui import file_filter, notify, render
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.model_text import literal_markdown
from ragloom_app.ui.settings_form import SettingsForm, build_settings_form

__all__ = ["IndexAdminHandlers", "IndicesPanel", "PanelChange", "build_indices_panel"]

logger = logging.getLogger(__name__)


class PanelChange(NamedTuple):
    """What creating or deleting an index updates, by name: the outputs of both events
    are wired from the same fields, so a value can never land in the wrong component."""

    index_selector: Any  # the Files tab's
    file_list: Any
    delete_selector: Any
    table: Any
    chat_filter: Any
    status: Any
    confirm_box: Any
    new_name: Any  # the creation form's name box

    @classmethod
    def only(cls, **changed: Any) -> PanelChange:
        """The ``changed`` outputs; every other one left as it is."""
        return cls(**{name: changed.get(name, gr.skip()) for name in cls._fields})


def _named(name: str) -> str:
    """An index name, quoted, for the Markdown of a status line: shown as written (a name
    may hold ``[Cancel](https://...)`` or ``<img>``)."""
    return literal_markdown(repr(name))


def _refused(message: str, **changed: Any) -> PanelChange:
    """Warn ``message`` (plain text; it may hold a name or an error's words) and show it
    as written in the status line, with the ``changed`` outputs."""
    notify.warn(message)
    return PanelChange.only(status=literal_markdown(message), **changed)


class IndexAdminHandlers:
    """What the section's events do; every method returns values for gradio outputs."""

    def __init__(
        self, app: BaseApp, file_list: Callable[[str | None, gr.Request | None], str]
    ) -> None:
        self.app = app
        self.file_list = file_list
        self.form: SettingsForm | None = None  # set once the form is laid out

    def names(self, user: User) -> list[str]:
        """The names of the indices ``user`` may read, oldest first."""
        return [index.name for index in self.app.indices.readable_by(user.id)]

    def writable_names(self, user: User) -> list[str]:
        """The names of the indices ``user`` may delete, oldest first."""
        manager = self.app.indices
        return [
            index.name
            for index in manager.readable_by(user.id)
            if manager.access(index).writable_by(user.id, user.is_admin)
        ]

    def type_choices(self) -> list[tuple[str, str]]:
        """``(class name, dotted path)`` of every registered index type."""
        return [(path.rsplit(".", 1)[-1], path) for path in self.app.indices.index_types]

    def rows(self, user: User) -> list[dict[str, Any]]:
        """One row per index ``user`` may read: its settings, how many files it has, its
        owner and whether it is shared."""
        rows = []
        for index in self.app.indices.readable_by(user.id):
            access = self.app.indices.access(index)
            specs = type(index).admin_settings_for(self.app.indices.readers)
            defaults = {k: s.get("value") for k, s in specs.items()}
            try:
                files = len(index.list_sources())
            except Exception:
                logger.exception("cannot list the files of %r", index.name)
                files = 0
            rows.append(
                {
                    **defaults,
                    **index.config,
                    "name": index.name,
                    "files": files,
                    "owner": self.app.accounts.display_name(access.owner),
                    "visibility": "shared" if access.shared else "private",
                }
            )
        return rows

    def table(self, request: gr.Request | None = None) -> str:
        """The user's indices table, and those of them left out at startup, with why."""
        user = ui_user(self.app, request)
        return render.indices_html(self.rows(user), self.app.indices.unavailable_to(user.id))

    def _changed(
        self,
        selected: str | None,
        filter_values: list[str] | None,
        status: str,
        request: gr.Request | None,
    ) -> PanelChange:
        """Every selector refreshed after an index was created or deleted."""
        user = ui_user(self.app, request)
        names = self.names(user)
        selected = selected if selected in names else (names[0] if names else None)
        writable = self.writable_names(user)
        return PanelChange(
            index_selector=gr.update(choices=names, value=selected),
            file_list=self.file_list(selected, request) if selected else render.sources_html([]),
            delete_selector=gr.update(
                choices=writable, value=selected if selected in writable else None
            ),
            table=self.table(request),
            chat_filter=file_filter.filter_update(self.app, filter_values, user.id),
            status=status,
            confirm_box=gr.update(visible=False),
            new_name=gr.skip(),
        )

    def create(
        self,
        name: str | None,
        type_id: str | None,
        filter_values: list[str] | None,
        request: gr.Request | None = None,
        *values: Any,
    ) -> PanelChange:
        """Create an index of the user's from the form; it becomes the Files tab's
        selected index."""
        user = ui_user(self.app, request)
        name = (name or "").strip()
        type_id = type_id or next(iter(self.app.indices.index_types), None)
        if not name:
            notify.warn("Give the new index a name.")
            return PanelChange.only(status="The new index needs a name.")
        if type_id is None or type_id not in self.app.indices.index_types:
            notify.warn("Choose an index type.")
            return PanelChange.only(status="Choose an index type.")
        config = self.form.values_for(type_id, values) if self.form else {}
        try:
            config = self.app.indices.normalize_config(type_id, config)
            shared = config.get("visibility") == "shared"
            if shared and not (user.is_admin or user is LOCAL):
                raise ValueError("only an admin makes a shared index: choose private")
            self.app.indices.create(name, type_id, config, owner=user.id, shared=shared)
        except IndexNameError as exc:  # Ragloom's own rule, whole: its '/' is not a path
            return _refused(f"Could not create {name!r}: {exc}")
        except (ValueError, KeyError) as exc:  # the form's values: the user's to fix
            return _refused(f"Could not create {name!r}: {scrub(str(exc))}")
        except Exception as exc:  # the index type's own failure: the log has the details
            return _refused(user_error(exc, f"Creating the index {name!r}", log=logger).message)
        logger.info("UI: %s created index %r", user.name, name)
        made = self._changed(name, filter_values, f"Created the index {_named(name)}.", request)
        return made._replace(new_name="")  # the form is ready for the next one

    def _writable(self, name: str, user: User) -> BaseIndex:
        """The index ``name`` if ``user`` may write it; KeyError otherwise (also for one
        it may read but not write: the selector never offers those)."""
        if name not in self.writable_names(user):
            raise UnknownIndexError(f"no index named {name!r} that you may delete")
        return self.app.indices.get(name)

    def ask_delete(
        self, name: str | None, request: gr.Request | None = None
    ) -> tuple[Any, str, str | None]:
        """Show the confirmation for deleting ``name``, saying what would be lost; the
        name confirmed is kept (the last value), so that "Yes" deletes that one, whatever
        the selector shows by then."""
        if not name:
            notify.warn("Choose the index to delete.")
            return self.cancel_delete()
        try:
            files = len(self._writable(name, ui_user(self.app, request)).list_sources())
        except KeyError:
            notify.warn(f"There is no index {name!r} any more.")
            return self.cancel_delete()
        plural = "file" if files == 1 else "files"
        question = (
            f"Delete the index **{literal_markdown(name)}** and its {files} {plural} "
            "from every store? This cannot be undone."
        )
        return gr.update(visible=True), question, name

    def on_load(self, selected: str | None, request: gr.Request | None = None) -> tuple[Any, str]:
        """On page load: the delete selector's choices (the user's to delete) and the
        table, fresh."""
        names = self.writable_names(ui_user(self.app, request))
        value = selected if selected in names else (names[0] if names else None)
        return gr.update(choices=names, value=value), self.table(request)

    def cancel_delete(self) -> tuple[Any, str, str | None]:
        """Hide the confirmation and forget the name it asked about."""
        return gr.update(visible=False), "", None

    def delete(
        self,
        name: str | None,
        current: str | None,
        filter_values: list[str] | None,
        request: gr.Request | None = None,
    ) -> PanelChange:
        """Delete ``name`` (confirmed, and the user's to delete) and everything it stored."""
        hidden = gr.update(visible=False)
        if not name:
            return PanelChange.only(status="Choose the index to delete.", confirm_box=hidden)
        user = ui_user(self.app, request)
        try:
            index = self._writable(name, user)
            if (refused := deletion_refused(self.app.jobs, index)) is not None:
                message = f"{_named(name)} cannot be deleted now: {refused}."
                return _refused(message, confirm_box=hidden)
            self.app.indices.delete(index.id)  # the id: the index checked, never another
        except KeyError as exc:
            return _refused(f"Could not delete {name!r}: {scrub(str(exc))}", confirm_box=hidden)
        except Exception as exc:
            failure = user_error(exc, f"Deleting the index {name!r}", log=logger)
            return _refused(failure.message, confirm_box=hidden)
        logger.info("UI: %s deleted index %r", user.name, name)
        return self._changed(current, filter_values, f"Deleted the index {_named(name)}.", request)


@dataclass
class IndicesPanel:
    """The components of the section (for wiring and tests)."""

    table: gr.HTML
    name: gr.Textbox
    index_type: gr.Dropdown
    form: SettingsForm
    create: gr.Button
    delete_selector: gr.Dropdown
    delete: gr.Button
    confirm_box: gr.Group
    confirm: gr.Button
    status: gr.Markdown
    handlers: IndexAdminHandlers


def build_indices_panel(
    demo: gr.Blocks,
    app: BaseApp,
    *,
    index_selector: gr.Dropdown,
    file_list: gr.HTML,
    file_list_fn: Callable[[str | None, gr.Request | None], str],
    chat_filter: gr.Dropdown,
) -> IndicesPanel:
    """Lay out the section (inside the current block) and wire its events."""
    handlers = IndexAdminHandlers(app, file_list_fn)
    types = handlers.type_choices()
    first_type = types[0][1] if types else None
    with gr.Accordion("Manage indices", open=False, elem_id="manage-indices"):
        # Filled when the page loads, with what the user may see.
        table = gr.HTML("", elem_id="index-table")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=320):
                gr.Markdown("#### New index", elem_classes="rl-panel-title")
                name = gr.Textbox(label="Name", elem_id="new-index-name", max_lines=1)
                index_type = gr.Dropdown(
                    choices=types,
                    value=first_type,
                    label="Type",
                    visible=len(types) > 1,
                    elem_id="new-index-type",
                    filterable=False,
                )
                specs = {path: app.indices.admin_settings(path) for path in app.indices.index_types}
                form = build_settings_form(specs, first_type, "new-index")
                handlers.form = form
                create = gr.Button("Create index", variant="primary", elem_id="create-index")
            with gr.Column(scale=2, min_width=260):
                gr.Markdown("#### Delete an index", elem_classes="rl-panel-title")
                delete_selector = gr.Dropdown(
                    choices=[],
                    value=None,
                    label="Index",
                    elem_id="delete-index-selector",
                    filterable=False,
                )
                delete = gr.Button("Delete index…", variant="stop", elem_id="delete-index")
                with gr.Group(visible=False, elem_id="delete-index-confirm-box") as confirm_box:
                    question = gr.Markdown("", elem_id="delete-index-question")
                    with gr.Row():
                        confirm = gr.Button(
                            "Yes, delete it", variant="stop", elem_id="delete-index-confirm"
                        )
                        cancel = gr.Button("Cancel", elem_id="delete-index-cancel")
        status = gr.Markdown("", elem_id="index-admin-status")

    change_outputs = list(
        PanelChange(
            index_selector=index_selector,
            file_list=file_list,
            delete_selector=delete_selector,
            table=table,
            chat_filter=chat_filter,
            status=status,
            confirm_box=confirm_box,
            new_name=name,
        )
    )
    # Creating and deleting take turns ("indexing"); an index is never deleted while files
    # are being written into it, as the jobs' admission and the busy check see to.
    create.click(
        handlers.create,
        inputs=[name, index_type, chat_filter, *form.components],
        outputs=change_outputs,
        concurrency_limit=1,
        concurrency_id="indexing",
        api_visibility="private",
    )
    if len(form.groups) > 1:
        index_type.change(
            form.show,
            inputs=index_type,
            outputs=list(form.groups.values()),
            api_visibility="private",
        )
    # What "Yes, delete it" deletes: the index the question named, kept on the server.
    confirmed = gr.State(None)
    asking = [confirm_box, question, confirmed]
    delete.click(
        handlers.ask_delete, inputs=delete_selector, outputs=asking, api_visibility="private"
    )
    cancel.click(handlers.cancel_delete, outputs=asking, api_visibility="private")
    delete_selector.change(handlers.cancel_delete, outputs=asking, api_visibility="private")
    confirm.click(
        handlers.delete,
        inputs=[confirmed, index_selector, chat_filter],
        outputs=change_outputs,
        concurrency_limit=1,
        concurrency_id="indexing",
        api_visibility="private",
    )
    demo.load(
        handlers.on_load,
        inputs=delete_selector,
        outputs=[delete_selector, table],
        api_visibility="private",
    )
    return IndicesPanel(
        table=table,
        name=name,
        index_type=index_type,
        form=form,
        create=create,
        delete_selector=delete_selector,
        delete=delete,
        confirm_box=confirm_box,
        confirm=confirm,
        status=status,
        handlers=handlers,
    )
