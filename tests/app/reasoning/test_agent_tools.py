"""The agent modes build fresh tools per request; docsearch's sentence focus is a setting."""

import pytest

from ragloom.agents.tools import DocSearchTool
from ragloom_app.app import BaseApp
from ragloom_app.reasoning.react import ReActReasoning
from ragloom_app.reasoning.rewoo import ReWOOReasoning
from ragloom_app.settings import AppSettings


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return BaseApp(AppSettings(data_dir=tmp_path_factory.mktemp("data"))).start()


@pytest.mark.parametrize("mode", [ReActReasoning, ReWOOReasoning])
def test_docsearch_focuses_on_sentences_unless_the_setting_is_zero(
    app: BaseApp, mode: type[ReActReasoning] | type[ReWOOReasoning]
) -> None:
    default = mode.resolve_settings()["focus_sentences"]
    assert default > 0
    focused = mode.get_pipeline({}, app.reasoning_state(), []).agent.tools["docsearch"]
    assert isinstance(focused, DocSearchTool)
    assert focused.focus is not None and focused.focus.sentences == default
    assert focused.focus.embeddings is app.embeddings()
    whole = mode.get_pipeline({"focus_sentences": 0}, app.reasoning_state(), []).agent.tools
    assert whole["docsearch"].focus is None
    assert whole["docsearch"] is not focused  # tools are built per request
