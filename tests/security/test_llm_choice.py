"""A user picks a mode's LLM only among those the admin offers (``SELECTABLE_LLMS``).

The "Planner/Solver LLM" settings were free text: any name in ``LLMS`` could be sent, a
hosted model's included, so a user could send the passages of a private index to a
service when the admin chose the local model for privacy. Now they are a choice among the
offered LLMs (by default the default LLM alone), and the server refuses any other name
however it comes: the gradio API, a settings dict, a plugin mode's own lookup.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from ragloom.llms.replay import ReplayLLM
from ragloom_app.app import BaseApp, LLMNotOfferedError
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.rewoo import ReWOOReasoning
from ragloom_app.settings import SettingsError
from ragloom_app.ui.chat_handlers import ChatHandlers
from tests.helpers.ports import free_port
from tests.helpers.scripted_app import scripted_app

pytestmark = pytest.mark.security

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"
QUESTION = "How hot does the Zorblax reactor run?"
PLAN = "#Plan1: Search.\n#E1 = docsearch[reactor temperature]\n"
LLMS = {
    "local": {"class": "ragloom_app.testing.ReplayLLM"},
    # Configured (an admin may use it elsewhere) but not offered to users.
    "hosted": {"class": "ragloom_app.testing.ReplayLLM", "replies": ["from the hosted model"]},
}
REFUSED = (
    "the LLM 'hosted' cannot be chosen here; choose one of: local "
    "(the administrator lists them in SELECTABLE_LLMS)"
)


def _replay(app: BaseApp, name: str) -> ReplayLLM:
    llm = app.llm(name)
    assert isinstance(llm, ReplayLLM)
    return llm


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return scripted_app(tmp_path_factory.mktemp("app"), LLMS, {"r.md": REACTOR})


@pytest.fixture(scope="module")
def client(app: BaseApp) -> Iterator[Client]:
    from ragloom_app.ui.server import serve

    port = free_port()
    demo = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield Client(f"http://127.0.0.1:{port}/", verbose=False)
    finally:
        demo.close()


def _rewoo_llm_params(client: Client) -> dict[str, str]:
    """The API parameter names of ReWOO's planner and solver settings."""
    info = client.view_api(return_format="dict", print_info=False)
    by_label = {
        p["label"]: p["parameter_name"] for p in info["named_endpoints"]["/ask"]["parameters"]
    }
    return {"planner_llm": by_label["Planner LLM"], "solver_llm": by_label["Solver LLM"]}


def test_the_form_offers_the_default_llm_only(app: BaseApp) -> None:
    specs = ChatHandlers(ChatPage(app)).mode_settings()["rewoo"]
    for key in ("planner_llm", "solver_llm"):
        assert specs[key]["component"] == "dropdown"
        assert specs[key]["choices"] == [("The chat's LLM (local)", "")]


def test_the_api_refuses_an_llm_not_offered(app: BaseApp, client: Client) -> None:
    hosted = _replay(app, "hosted")
    params = _rewoo_llm_params(client)
    with pytest.raises(AppError, match="hosted is not in the list of choices"):
        client.predict(
            QUESTION, "rewoo", None, api_name="/ask", **{params["planner_llm"]: "hosted"}
        )
    assert hosted.prompts == []  # not one passage reached it
    # The next request is served, with the default LLM.
    _replay(app, "local").replies[:] = ["It runs at 451 kelvin [1]."]
    result = client.predict(QUESTION, "fullqa", None, api_name="/ask")
    assert "451 kelvin" in str(result[0][-1]["content"])


def test_a_settings_dict_naming_it_is_refused_with_the_offered_ones(app: BaseApp) -> None:
    hosted = _replay(app, "hosted")
    page = ChatPage(app)
    conversation = page.conversations.create()
    for key in ("planner_llm", "solver_llm"):
        with pytest.raises(LLMNotOfferedError) as refused:
            list(
                page.ask(
                    QUESTION, mode="rewoo", settings={key: "hosted"}, conversation_id=conversation
                )
            )
        assert str(refused.value) == REFUSED
    assert hosted.prompts == []
    assert page.conversations.messages(conversation) == []  # nothing stored either
    # The request's state refuses it too, for a plugin mode that looks LLMs up itself.
    with pytest.raises(LLMNotOfferedError):
        app.reasoning_state().llm_for("hosted")
    _replay(app, "local").replies[:] = [PLAN, "It runs at 451 kelvin [1]."]
    events = list(page.ask(QUESTION, mode="rewoo", conversation_id=conversation))
    assert isinstance(events[-1], AnswerFinished) and "451" in events[-1].record.answer


def test_an_offered_llm_is_offered_and_used(tmp_path: Path) -> None:
    app = scripted_app(tmp_path, LLMS, {"r.md": REACTOR}, selectable_llms=["hosted"])
    specs = ChatHandlers(ChatPage(app)).mode_settings()["rewoo"]
    assert specs["solver_llm"]["choices"] == [("The chat's LLM (local)", ""), ("hosted", "hosted")]
    pipeline = ChatPage(app).create_pipeline("rewoo", {"solver_llm": "hosted"})
    assert isinstance(pipeline, ReWOOReasoning)
    assert pipeline.agent.solver.llm is app.llm("hosted")
    assert pipeline.agent.planner.llm is app.llm("local")


def test_an_unknown_name_in_the_setting_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"SELECTABLE_LLMS: 'gpt' is not in LLMS"):
        scripted_app(tmp_path, LLMS, selectable_llms=["gpt"])
