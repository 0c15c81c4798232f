"""Every mode's sentence focus is a setting ("Sentences shown per search"), built per request."""

from pathlib import Path

import pytest

from ragloom.agents.tools import DocSearchTool
from ragloom_app.app import BaseApp
from ragloom_app.reasoning.decompose import DecomposeReasoning
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.reasoning.react import ReActReasoning
from ragloom_app.reasoning.rewoo import ReWOOReasoning
from ragloom_app.settings import AppSettings, SettingsError


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return BaseApp(AppSettings(data_dir=tmp_path_factory.mktemp("data"))).start()


def _docsearch(app: BaseApp, mode: type, settings: dict[str, int]) -> DocSearchTool:
    tool = mode.get_pipeline(settings, app.reasoning_state(), []).agent.tools["docsearch"]
    assert isinstance(tool, DocSearchTool)
    return tool


def test_rewoo_shows_focused_sentences_by_default(app: BaseApp) -> None:
    focused = _docsearch(app, ReWOOReasoning, {})
    assert focused.focus is not None
    assert focused.focus.sentences == ReWOOReasoning.resolve_settings()["focus_sentences"] > 0
    assert focused.focus.embeddings is app.embeddings()
    assert _docsearch(app, ReWOOReasoning, {"focus_sentences": 0}).focus is None


def test_react_shows_whole_passages_unless_asked(app: BaseApp) -> None:
    # Measured: with cut passages the small model searched again instead of answering.
    whole = _docsearch(app, ReActReasoning, {})
    assert whole.focus is None
    focused = _docsearch(app, ReActReasoning, {"focus_sentences": 6})
    assert focused.focus is not None and focused.focus.sentences == 6
    assert focused is not _docsearch(app, ReActReasoning, {"focus_sentences": 6})  # per request


def test_fullqa_and_decomposition_focus_when_asked(app: BaseApp) -> None:
    state = app.reasoning_state()
    for mode, focus_of in [
        (FullQAReasoning, lambda pipeline: pipeline.answerer.focus),
        (DecomposeReasoning, lambda pipeline: pipeline.agent.focus),
    ]:
        default = mode.resolve_settings()["focus_sentences"]
        focus = focus_of(mode.get_pipeline({}, state, []))
        assert (focus.sentences if focus else 0) == default
        focus = focus_of(mode.get_pipeline({"focus_sentences": 5}, state, []))
        assert focus is not None and focus.sentences == 5
        assert focus.embeddings is app.embeddings()
        assert focus_of(mode.get_pipeline({"focus_sentences": 0}, state, [])) is None


def _app_with(folder: Path, **settings: object) -> BaseApp:
    values = AppSettings(data_dir=folder / "data", first_run_docs=None, **settings)  # type: ignore[arg-type]
    values.embeddings = {
        "hash": {"class": "ragloom_app.testing.HashEmbeddings"},
        "small-hash": {"class": "ragloom_app.testing.HashEmbeddings", "size": 16},
    }
    values.default_embedding = "hash"
    return BaseApp(values).start()


def test_the_focus_ranks_with_focus_embedding_and_nothing_else_does(tmp_path: Path) -> None:
    app = _app_with(tmp_path, focus_embedding="small-hash")

    focus = FullQAReasoning.get_pipeline({}, app.reasoning_state(), []).answerer.focus
    assert focus is not None and focus.embeddings is app.focus_embeddings()
    assert focus.embeddings.dimension == 16 and focus.embeddings is not app.embeddings()
    assert _docsearch(app, ReWOOReasoning, {}).focus.embeddings is app.focus_embeddings()  # type: ignore[union-attr]
    assert app.embeddings().dimension == 64  # what the index stores and searches with


def test_without_focus_embedding_the_focus_shares_the_default_model(tmp_path: Path) -> None:
    app = _app_with(tmp_path)
    assert app.focus_embeddings() is app.embeddings()


def test_a_focus_embedding_that_is_not_in_embeddings_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="FOCUS_EMBEDDING: 'nowhere' is not in EMBEDDINGS"):
        _app_with(tmp_path, focus_embedding="nowhere")
    with pytest.raises(SettingsError, match="FOCUS_EMBEDDING"):
        AppSettings(focus_embedding="")
