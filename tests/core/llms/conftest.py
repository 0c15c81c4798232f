"""Shared fixtures of the LLM tests: the bundled model, one loaded chat model, a real server.

The real-model fixtures are session-scoped so that the 491 MB model is joined and loaded
once per test run (the module-level model cache of ``LlamaCppChat`` is shared anyway).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.llms.bundled import bundled_model_path
from ragloom.llms.llamacpp import LlamaCppChat
from tests.helpers.llama_server import llama_server as serve
from tests.helpers.ports import free_port


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (the probe socket is closed again)."""
    return free_port()


@pytest.fixture(scope="session")
def bundled_gguf() -> Path:
    """The joined, verified default model (in the user's model cache, as the app uses it)."""
    return bundled_model_path()


@pytest.fixture(scope="session")
def llama_chat(bundled_gguf: Path) -> LlamaCppChat:
    """The bundled model in-process, loaded once for the session."""
    chat = LlamaCppChat(model_path=str(bundled_gguf))
    chat.llama()  # load and warm up here, not inside the first test's timing
    return chat


@pytest.fixture(scope="session")
def llama_server(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``python -m llama_cpp.server`` on a free loopback port; yields its /v1 base URL."""
    with serve(bundled_gguf, tmp_path_factory.mktemp("llama_server")) as base_url:
        yield base_url
