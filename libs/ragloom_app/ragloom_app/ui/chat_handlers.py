"""What the Chat tab's events do: :class:`ChatHandlers`, on top of
:class:`~ragloom_app.pages.chat.ChatPage`.

Each handler acts for the user of its ``gr.Request``
(:func:`~ragloom_app.ui.identity.ui_user`): its own conversations, the indices it may read,
its saved defaults. The layout and wiring are :mod:`ragloom_app.ui.chat_tab`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import gradio as gr

from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    StepFinished,
    StepStarted,
)
from ragloom_app.accounts.preferences import ChatDefaults, ChatDefaultsStore, SettingsTooLargeError
from ragloom_app.errors import user_error
from ragloom_app.pages.chat import AnswerFinished, ChatPage, QuestionTooLongError
from ragloom_app.reasoning.settings import ModeSettingsError, offer_llms
from ragloom_app.ui import file_filter, index_settings, notify, render
from ragloom_app.ui.grounding_marks import grounded_answer_html
from ragloom_app.ui.identity import ui_user
from ragloom_app.ui.mode_values import checked_mode_settings, every_mode_settings
from ragloom_app.ui.model_text import literal_markdown, model_html, plain_html
from ragloom_app.ui.settings_form import SettingsForm
from ragloom_app.ui.steps import step_warning

__all__ = ["MAX_LISTED_CONVERSATIONS", "MAX_TITLE_CHARS", "ChatHandlers"]
logger = logging.getLogger(__name__)

Message = dict[str, str]
# chatbot, question box, evidence, usage, conversation selector, send button
RespondOutput = tuple[Any, Any, Any, Any, Any, Any]

_WAITING_EVIDENCE = "The evidence appears when the answer is complete."
MAX_TITLE_CHARS = 200
MAX_LISTED_CONVERSATIONS = 200
"""Conversations the selector lists, the last changed first (a search reaches the rest)."""


class ChatHandlers:
    """What the chat events do; every method returns values for gradio outputs.

    Each acts for the user of its ``gr.Request`` (:func:`~ragloom_app.ui.identity.ui_user`):
    its own conversations, the indices it may read.
    """

    def __init__(self, page: ChatPage) -> None:
        self.page = page
        self.store = page.conversations
        self.settings_form: SettingsForm | None = None  # set once the form is laid out

    # -- modes -------------------------------------------------------------------------
    def mode_choices(self) -> list[tuple[str, str]]:
        """(name, id) of each registered reasoning mode, in registration order."""
        return [(cls.get_info().name, mode_id) for mode_id, cls in self.page.app.reasonings.items()]

    def mode_description(self, mode_id: str | None) -> str:
        """The description of a mode, shown under the selector."""
        try:
            return self.page.reasoning_class(mode_id).get_info().description
        except KeyError:
            return ""

    def describe_mode(self, mode_id: str | None) -> Any:
        """Show the selected mode's description as the selector's help text."""
        return gr.update(info=self.mode_description(mode_id))

    def mode_settings(self) -> dict[str, dict[str, Any]]:
        """The user settings of every mode, by mode id; LLM settings offer the LLMs a user
        may choose (``SELECTABLE_LLMS``)."""
        offered = self.page.app.selectable_llm_names()
        return {
            mode_id: offer_llms(cls.get_user_settings(), offered)
            for mode_id, cls in self.page.app.reasonings.items()
        }

    def saved_defaults(self, user_id: str) -> ChatDefaults:
        """``user_id``'s saved chat defaults, limited to what is offered now."""
        saved = ChatDefaultsStore(self.page.app.engine).get(user_id)
        return saved.offered(
            self.mode_settings(), index_settings.index_specs(self.page.app, user_id)
        )

    def load_defaults(self, request: gr.Request | None = None) -> list[Any]:
        """On page load: the user's saved mode, every mode's settings and the indices'
        search settings (the values of :func:`build_chat_tab`'s defaults outputs)."""
        saved = self.saved_defaults(ui_user(self.page.app, request).id)
        mode_id = saved.mode or self.page.app.settings.default_reasoning
        form = self.settings_form
        values = (
            [
                saved.modes.get(owner, {}).get(key, form.specs[owner][key].get("value"))
                for owner, key in form.keys
            ]
            if form is not None
            else []
        )
        mode = gr.update(value=mode_id, info=self.mode_description(mode_id))
        return [mode, *values, saved.indices]

    def save_defaults(
        self,
        mode_id: str | None,
        index_values: index_settings.IndexValues | None,
        request: gr.Request | None = None,
        *setting_values: Any,
    ) -> str:
        """Save the mode, every mode's settings and the indices' search settings shown now
        as the user's defaults; the status to show. Nothing is saved when a mode refuses a
        value (as the HTTP API would: NaN, out of bounds, text too long)."""
        user = ui_user(self.page.app, request)
        form = self.settings_form
        indices = index_settings.sent(self.page.app, index_values, user.id)
        try:
            modes = (
                every_mode_settings(self.page, form, setting_values)
                if form is not None and setting_values
                else {}
            )
            ChatDefaultsStore(self.page.app.engine).save(
                user.id, ChatDefaults(mode=mode_id, modes=modes, indices=indices)
            )
        except (ModeSettingsError, SettingsTooLargeError) as exc:
            notify.warn(f"The settings were not saved: {exc}.")
            return f"Not saved: {literal_markdown(str(exc))}."  # it may quote a value sent
        return "Saved: new pages open with these settings."

    def request_settings(self, mode_id: str | None, values: tuple[Any, ...]) -> dict[str, Any]:
        """The selected mode's settings from the values of every settings component,
        checked as the HTTP API checks them: :class:`ModeSettingsError` for a value the
        mode refuses."""
        if self.settings_form is None or not values:
            return {}
        mode_id = mode_id or self.page.app.settings.default_reasoning
        return checked_mode_settings(self.page, self.settings_form, mode_id, values)

    def refresh_file_filter(
        self, current: list[str] | None, request: gr.Request | None = None
    ) -> Any:
        """The file filter's choices, fresh from the indices the user may read."""
        return file_filter.filter_update(self.page.app, current, ui_user(self.page.app, request).id)

    # -- conversations -----------------------------------------------------------------
    def conversation_selector(self, selected: str | None, owner: str, search: str = "") -> Any:
        """The selector's choices (``owner``'s last changed conversations whose title holds
        ``search``, any case, :data:`MAX_LISTED_CONVERSATIONS` at most), with ``selected``
        chosen.

        The open conversation stays among the choices though the search leaves it out,
        and one that is gone is chosen no more: gradio refuses a value outside the
        choices, and would refuse the next question with it.
        """
        listed = self.store.list(owner, search=search.strip(), limit=MAX_LISTED_CONVERSATIONS)
        if selected and all(c["id"] != selected for c in listed):
            kept = self.store.get(selected, owner=owner)
            listed += [kept] if kept is not None else []
            selected = selected if kept is not None else None
        return gr.update(choices=render.conversation_choices(listed), value=selected)

    def search_conversations(
        self, search: str | None, selected: str | None, request: gr.Request | None = None
    ) -> Any:
        """List only the user's conversations whose title holds ``search``."""
        owner = ui_user(self.page.app, request).id
        return self.conversation_selector(selected, owner, (search or "")[:MAX_TITLE_CHARS])

    def open_conversation(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> tuple[Any, str, str]:
        """Messages and last evidence of one of the user's conversations (empty for
        ``None``, or for one that is not the user's)."""
        if not conversation_id:
            return [], render.EVIDENCE_PLACEHOLDER, ""
        owner = ui_user(self.page.app, request).id
        try:
            if self.store.get(conversation_id, owner=owner) is None:
                notify.warn("That conversation was deleted.")
                return [], render.EVIDENCE_PLACEHOLDER, ""
            messages = self.store.messages(conversation_id)
        except Exception as exc:  # a broken database must not take the page down
            notify.warn(user_error(exc, "Opening the conversation", log=logger).message)
            return gr.skip(), gr.skip(), gr.skip()
        citations = render.last_citations(messages)
        evidence = (
            render.EVIDENCE_PLACEHOLDER if citations is None else render.evidence_html(citations)
        )
        # Steps and usage are not stored per message; say so rather than show stale ones.
        usage = plain_html(
            "Steps and usage are shown for answers given in this session.", emphasis=True
        )
        return render.chat_history(messages), evidence, usage

    def new_conversation(self) -> tuple[Any, list[Message], str, str]:
        """Clear the chat; the conversation is created with its first question."""
        return gr.update(value=None), [], render.EVIDENCE_PLACEHOLDER, ""

    def rename_conversation(
        self, conversation_id: str | None, title: str | None, request: gr.Request | None = None
    ) -> tuple[Any, Any]:
        """Give the open conversation a new title; the selector and the box, updated."""
        owner = ui_user(self.page.app, request).id
        title = " ".join((title or "").split())[:MAX_TITLE_CHARS]
        if not conversation_id or not title:
            notify.warn("Open a conversation and type its new title first.")
            return gr.skip(), gr.skip()
        if not self.store.rename(conversation_id, title, owner=owner):
            notify.warn("That conversation was deleted.")
        return self.conversation_selector(conversation_id, owner), gr.update(value="")

    def delete_conversation(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> tuple[Any, list[Message], str, str]:
        """Delete the open conversation and its messages; the chat is cleared."""
        owner = ui_user(self.page.app, request).id
        if not conversation_id:
            notify.warn("Open the conversation to delete first.")
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        self.store.delete(conversation_id, owner=owner)
        return self.conversation_selector(None, owner), [], render.EVIDENCE_PLACEHOLDER, ""

    def on_load(
        self, files: list[str] | None = None, request: gr.Request | None = None
    ) -> tuple[Any, Any, str, str, Any]:
        """On page load: list the user's conversations, reopen the most recent one, list
        the files of the indices it may read."""
        owner = ui_user(self.page.app, request).id
        filter_choices = self.refresh_file_filter(files, request)
        try:
            conversations = self.store.list(owner, limit=MAX_LISTED_CONVERSATIONS)
        except Exception as exc:
            failure = user_error(exc, "Reading the conversations", log=logger)
            notify.warn(failure.message)
            return gr.skip(), [], render.EVIDENCE_PLACEHOLDER, "", filter_choices
        latest = conversations[0]["id"] if conversations else None
        selector = gr.update(choices=render.conversation_choices(conversations), value=latest)
        return (selector, *self.open_conversation(latest, request), filter_choices)

    # -- answering ---------------------------------------------------------------------
    def respond(
        self,
        question: str,
        mode_id: str | None,
        conversation_id: str | None,
        files: list[str] | None = None,
        index_values: index_settings.IndexValues | None = None,
        request: gr.Request | None = None,
        *setting_values: Any,
    ) -> Iterator[RespondOutput]:
        """Ask ``question`` and stream the answer into the chat as it is written.

        ``files`` are the file filter's values (none: every file); ``index_values`` the
        search settings the user changed, by index; ``setting_values`` the values of every
        settings component, of which the selected mode's are used. It acts for the
        request's user: its conversation, the indices it may read.
        """
        owner = ui_user(self.page.app, request).id
        question = (question or "").strip()
        if not question:
            notify.warn("Type a question first.")
            yield _outputs()
            return
        try:
            self.page.check_question(question)
            # Before the conversation is made, as the API checks them: nothing is saved.
            settings = self.request_settings(mode_id, setting_values)
        except (QuestionTooLongError, ModeSettingsError) as exc:
            notify.warn(f"The question was not sent: {exc}.")
            yield _outputs()
            return
        except Exception as exc:
            shown = [*self._history_or_none(conversation_id, owner), _user(question)]
            yield self._failed(shown, exc, "Answering", owner, conversation_id)
            return
        try:
            if conversation_id and self.store.get(conversation_id, owner=owner) is None:
                conversation_id = None  # deleted meanwhile (or never the user's): a new one
            conversation_id = conversation_id or self.store.create(owner=owner)
            # The database, not the chatbot's value, is the record of the conversation.
            history = render.chat_history(self.store.messages(conversation_id))
        except Exception as exc:
            yield self._failed([_user(question)], exc, "Opening the conversation", owner)
            return
        history.append(_user(question))
        answer = ""
        status = self._waiting_status(settings) or "Searching the documents…"
        # Lock the inputs while answering: a second question would queue behind this one
        # and, before the first finishes, not know which conversation it belongs to.
        yield _outputs(
            chat=[*history, _status(status)],
            question=gr.update(value="", interactive=False),
            evidence=render.evidence_html([], empty=_WAITING_EVIDENCE),
            usage="",
            send=gr.update(interactive=False),
        )
        try:
            events = self.page.ask(
                question,
                mode=mode_id,
                settings=settings,
                conversation_id=conversation_id,
                selected_sources=file_filter.selected_sources(self.page.app, files, owner),
                index_settings=index_settings.sent(self.page.app, index_values, owner),
                user_id=owner,
            )
            for event in events:
                if isinstance(event, AnswerDelta):
                    answer += event.text
                    yield _outputs(chat=[*history, _bot(answer)])
                elif isinstance(event, AnswerRevised):  # e.g. the same text, citations added
                    answer = event.text
                    yield _outputs(chat=[*history, _bot(answer)])
                elif isinstance(event, StepStarted) and not answer:
                    # A step's own words, unless the model it goes on to is busy: its
                    # LLM call will wait, with no event to say so meanwhile.
                    status = self._waiting_status(settings) or render.step_status(event)
                    yield _outputs(chat=[*history, _status(status)])
                elif isinstance(event, StepFinished) and event.error:
                    notify.warn(step_warning(event))
                elif isinstance(event, CitationsFound):
                    yield _outputs(evidence=render.evidence_html(event.citations))
                elif isinstance(event, AnswerFinished):
                    record = event.record
                    # Once complete, each checked sentence is marked found or not found.
                    final = (
                        grounded_answer_html(record.answer, record.grounding)
                        if record.answer
                        else model_html(answer)
                    )
                    yield _outputs(
                        chat=[*history, {"role": "assistant", "content": final}],
                        question=gr.update(interactive=True),
                        evidence=render.evidence_html(record.citations),
                        usage=render.usage_html(record),
                        selector=self.conversation_selector(conversation_id, owner),
                        send=gr.update(interactive=True),
                    )
        except Exception as exc:
            yield self._failed(history, exc, "Answering", owner, conversation_id)

    def _waiting_status(self, settings: Mapping[str, Any]) -> str | None:
        """What the chat says while the local model answers others ("Waiting its turn"),
        or ``None`` when it is free (or the LLM is an endpoint)."""
        ahead = self._answers_in_line(settings)
        if not ahead:
            return None
        # The local model answers one question at a time, first come, first served.
        return (
            f"Waiting its turn: {ahead} answer{'s' if ahead != 1 else ''} ahead of this one "
            "on the local model…"
        )

    def _answers_in_line(self, settings: Mapping[str, Any]) -> int:
        """Answers generating with, or waiting for, the LLM these settings use (0 for an
        endpoint, which queues on its own)."""
        name = settings.get("llm")
        try:
            llm = self.page.app.llm(name if isinstance(name, str) else None)
        except Exception:  # an unknown name fails the answer itself, with its reason
            return 0
        return int(getattr(llm, "in_line", 0))

    def _history_or_none(self, conversation_id: str | None, owner: str) -> list[Message]:
        """The open conversation's turns as the chat shows them; none if it cannot be read
        (it may be what failed), or is not ``owner``'s."""
        try:
            if conversation_id and self.store.get(conversation_id, owner=owner) is not None:
                return render.chat_history(self.store.messages(conversation_id))
        except Exception:
            logger.warning("the conversation could not be read", exc_info=True)
        return []

    def _failed(
        self,
        history: list[Message],
        exc: Exception,
        action: str,
        owner: str,
        conversation_id: str | None = None,
    ) -> RespondOutput:
        """Outputs that show an error in the chat, in words with a log reference (the
        stack trace goes to the log), and give the inputs back."""
        failure = user_error(exc, action, log=logger)
        notify.warn(failure.message)
        selector = _KEEP
        if conversation_id:
            try:
                selector = self.conversation_selector(conversation_id, owner)
            except Exception:  # the database that failed the answer, often: inputs back first
                logger.warning("the conversation list could not be read", exc_info=True)
        return _outputs(
            chat=[*history, {"role": "assistant", "content": plain_html(failure.apology())}],
            question=gr.update(interactive=True),
            evidence=render.evidence_html([], empty="No evidence: the answer failed."),
            usage="",
            selector=selector,
            send=gr.update(interactive=True),
        )


_KEEP: Any = object()
"""An output :func:`_outputs` leaves as it is (a fresh ``gr.skip()`` each time)."""


def _outputs(
    *,
    chat: Any = _KEEP,
    question: Any = _KEEP,
    evidence: Any = _KEEP,
    usage: Any = _KEEP,
    selector: Any = _KEEP,
    send: Any = _KEEP,
) -> RespondOutput:
    """The outputs of :meth:`ChatHandlers.respond` in order, unchanged unless given."""
    values = (chat, question, evidence, usage, selector, send)
    return tuple(gr.skip() if v is _KEEP else v for v in values)


def _bot(markdown: str) -> Message:
    """An assistant message of model text, rendered so that it loads nothing."""
    return {"role": "assistant", "content": model_html(markdown)}


def _user(question: str) -> Message:
    return {"role": "user", "content": model_html(question)}


def _status(status: str) -> Message:
    """An assistant message that says what the answer is waiting for."""
    return {"role": "assistant", "content": plain_html(status, emphasis=True)}
