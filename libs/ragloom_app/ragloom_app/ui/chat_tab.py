"""The Chat tab: conversations, the reasoning mode, streamed answers and their evidence.

:class:`~ragloom_app.ui.chat_handlers.ChatHandlers` holds what the events do;
:func:`build_chat_tab` lays out the components and wires them. Conversations live in the
app database, so a reload (or a restart) finds them again: the most recent one opens when
the page loads. The sidebar also holds the conversation search, rename and delete, the
file filter (:mod:`ragloom_app.ui.file_filter`), each mode's settings and each index's
search settings, built from their ``get_user_settings()`` (:mod:`ragloom_app.ui.settings_form`,
:mod:`ragloom_app.ui.index_settings`), and the button that saves them as the user's
defaults. Every choice that depends on the user is filled when the page loads.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ragloom_app.pages.chat import ChatPage
from ragloom_app.ui import index_settings, render
from ragloom_app.ui.chat_handlers import MAX_TITLE_CHARS, ChatHandlers
from ragloom_app.ui.settings_form import SettingsForm, build_settings_form

__all__ = ["ChatTab", "build_chat_tab"]


@dataclass
class ChatTab:
    """The components of the Chat tab, for tests and for wiring across tabs."""

    conversations: gr.Radio
    new_button: gr.Button
    mode: gr.Dropdown
    chatbot: gr.Chatbot
    question: gr.Textbox
    send: gr.Button
    evidence: gr.HTML
    usage: gr.HTML
    file_filter: gr.Dropdown
    settings: SettingsForm
    handlers: ChatHandlers
    index_search: index_settings.IndexSettingsPanel


def build_chat_tab(demo: gr.Blocks, page: ChatPage, tab: gr.Tab | None = None) -> ChatTab:
    """Lay out the Chat tab inside the current ``gr.Tab`` (``tab``: its indices' settings
    are drawn again when it is shown, after indices were created or deleted) and wire its
    events."""
    handlers = ChatHandlers(page)
    default_mode = page.app.settings.default_reasoning
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=220, elem_classes="rl-sidebar"):
            # A radio list reads like a chat sidebar; CSS stacks it and lets it scroll.
            search = gr.Textbox(
                placeholder="Search conversations…",
                show_label=False,
                max_lines=1,
                max_length=MAX_TITLE_CHARS,
                elem_id="conversation-search",
            )
            conversations = gr.Radio(
                choices=[],
                value=None,
                label="Conversations",
                elem_id="conversation-list",
                elem_classes="rl-conversations",
            )
            new_button = gr.Button("New conversation", elem_id="new-conversation", size="sm")
            with gr.Accordion("Rename or delete", open=False, elem_id="conversation-tools"):
                title = gr.Textbox(
                    label="New title",
                    max_lines=1,
                    max_length=MAX_TITLE_CHARS,
                    elem_id="conversation-title",
                )
                with gr.Row():
                    rename_button = gr.Button("Rename", size="sm", elem_id="rename-conversation")
                    delete_button = gr.Button(
                        "Delete", size="sm", variant="stop", elem_id="delete-conversation"
                    )
            mode = gr.Dropdown(
                choices=handlers.mode_choices(),
                value=default_mode,
                label="Reasoning mode",
                info=handlers.mode_description(default_mode),
                elem_id="mode-selector",
                filterable=False,
            )
            # Every choice that depends on the user is filled when the page loads: the
            # page's own config is the same for everyone.
            files = gr.Dropdown(
                choices=[],
                value=[],
                multiselect=True,
                label="Search in files",
                info="None chosen: every file of every index.",
                elem_id="file-filter",
            )
            with gr.Accordion("Search settings", open=False, elem_id="search-settings"):
                form = build_settings_form(handlers.mode_settings(), default_mode, "setting")
                gr.HTML('<div class="rl-setting-title">Each index</div>')
                shown = [demo.load, *([tab.select] if tab is not None else [])]
                per_index = index_settings.build_index_settings(page.app, shown)
                save_defaults = gr.Button("Save as my defaults", size="sm", elem_id="save-defaults")
                saved_status = gr.Markdown("", elem_id="save-defaults-status")
            handlers.settings_form = form
        with gr.Column(scale=3, min_width=380):
            # Messages come as finished HTML (ui/model_text.py): gradio's own Markdown
            # would keep images and media that load from other hosts. No copy button: it
            # would copy that HTML, not the text.
            chatbot = gr.Chatbot(
                show_label=False,
                elem_id="chatbot",
                height=540,
                placeholder="Ask a question about your files. Answers cite the passages "
                "they draw on; see them under Evidence.",
                buttons=[],
                feedback_options=None,
                render_markdown=False,
                sanitize_html=True,
            )
            with gr.Row(equal_height=True):
                question = gr.Textbox(
                    placeholder="Ask about your documents…",
                    show_label=False,
                    lines=1,
                    max_lines=6,
                    scale=8,
                    elem_id="question",
                    autofocus=True,
                    max_length=page.app.settings.max_question_chars,
                )
                send = gr.Button("Send", variant="primary", scale=1, min_width=90, elem_id="send")
        with gr.Column(scale=2, min_width=300, elem_classes="rl-evidence-column"):
            gr.Markdown("### Evidence", elem_classes="rl-panel-title")
            evidence = gr.HTML(render.EVIDENCE_PLACEHOLDER, elem_id="evidence")
            with gr.Accordion("Steps and usage", open=False, elem_id="usage-accordion"):
                usage = gr.HTML("", elem_id="usage")

    respond_inputs = [question, mode, conversations, files, per_index.values, *form.components]
    respond_outputs = [chatbot, question, evidence, usage, conversations, send]
    # One answer at a time per process: the local model serves one generation at once.
    # The button's event is the public "ask" endpoint (gradio_client); Enter is the same.
    for trigger, visibility in ((send.click, "public"), (question.submit, "private")):
        trigger(
            handlers.respond,
            inputs=respond_inputs,
            outputs=respond_outputs,
            concurrency_limit=1,
            concurrency_id="answer",
            api_name="ask" if visibility == "public" else None,
            api_visibility=visibility,
        )
    # `input` fires only when the user picks a conversation, not when a handler sets it.
    conversations.input(
        handlers.open_conversation,
        inputs=conversations,
        outputs=[chatbot, evidence, usage],
        api_visibility="private",
    )
    new_button.click(
        handlers.new_conversation,
        outputs=[conversations, chatbot, evidence, usage],
        api_visibility="private",
    )
    search.input(
        handlers.search_conversations,
        inputs=[search, conversations],
        outputs=conversations,
        api_visibility="private",
        show_progress="hidden",
    )
    rename_button.click(
        handlers.rename_conversation,
        inputs=[conversations, title],
        outputs=[conversations, title],
        api_visibility="private",
    )
    delete_button.click(
        handlers.delete_conversation,
        inputs=conversations,
        outputs=[conversations, chatbot, evidence, usage],
        api_visibility="private",
    )
    mode.input(handlers.describe_mode, inputs=mode, outputs=mode, api_visibility="private")
    if form.groups:
        mode.change(
            form.show, inputs=mode, outputs=list(form.groups.values()), api_visibility="private"
        )
    save_defaults.click(
        handlers.save_defaults,
        inputs=[mode, per_index.values, *form.components],
        outputs=saved_status,
        api_visibility="private",
    )
    demo.load(
        handlers.load_defaults,
        outputs=[mode, *form.components, per_index.values],
        api_visibility="private",
    )
    demo.load(
        handlers.on_load,
        inputs=files,
        outputs=[conversations, chatbot, evidence, usage, files],
        api_visibility="private",
    )
    return ChatTab(
        conversations,
        new_button,
        mode,
        chatbot,
        question,
        send,
        evidence,
        usage,
        files,
        form,
        handlers,
        per_index,
    )
