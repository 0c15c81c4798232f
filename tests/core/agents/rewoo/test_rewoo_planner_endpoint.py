"""The ReWOO planner against a real OpenAI-compatible endpoint, constrained by a JSON schema.

The embedded llama.cpp model takes GBNF grammars, so it is planned with one; endpoints
such as OpenAI, vLLM or Ollama take only a schema. A real llama.cpp server given the
schema (as ``response_format``) stands in for them here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.agents.rewoo import ReWOOPlanner, validate_plan
from ragloom.agents.tools import BUILTIN_TOOLS
from ragloom.llms.bundled import bundled_model_path
from ragloom.llms.openai_compat import OpenAIChat
from tests.helpers.llama_server import llama_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(bundled_model_path(), tmp_path_factory.mktemp("json_server")) as url:
        yield url


@pytest.mark.llm
def test_a_schema_constrained_endpoint_writes_a_plan_that_validates(server: str) -> None:
    llm = OpenAIChat(
        base_url=server, model="bundled", server_kind="llama.cpp", max_retries=0, timeout=600.0
    )
    tools = list(BUILTIN_TOOLS)
    planner = ReWOOPlanner(llm=llm, tools=tools, max_steps=3, constraint="json_schema")
    assert planner.options().json_schema is not None and planner.options().grammar is None

    outcome = planner.plan("How hot is the Zorblax reactor, in degrees Celsius?")

    assert not outcome.repaired, outcome.first_problems
    assert outcome.plan.raw.lstrip().startswith("{")  # JSON, as the schema demanded
    validate_plan(outcome.plan, [t.name for t in tools], 3)
    assert 1 <= len(outcome.plan.steps) <= 3
