"""``ChatLLM.warm_up``: what a server calls at start-up, so that its first answer waits for
no loading, and which never sends the model a prompt."""

from __future__ import annotations

from ragloom.llms.base import ChatMessage
from ragloom.llms.openai_compat import OpenAIChat
from ragloom_app.testing.openai_standin import fake_openai
from tests.helpers.fresh_interpreter import printed_by


def test_an_endpoint_llm_warms_up_without_a_request() -> None:
    with fake_openai() as endpoint:
        chat = OpenAIChat(base_url=endpoint.url, model="fake", server_kind="openai")

        chat.warm_up()
        assert endpoint.requests == 0

        answer = chat.run([ChatMessage("user", "Say something.")])
        assert answer.text.strip() == endpoint.reply and endpoint.requests == 1


def test_warming_an_endpoint_llm_up_imports_the_openai_client() -> None:
    # In a fresh interpreter: this test process may have imported openai already.
    shown = printed_by(
        """
        import sys
        from ragloom.llms.openai_compat import OpenAIChat

        chat = OpenAIChat(base_url="http://127.0.0.1:9/v1", model="m", server_kind="openai")
        before = "openai" in sys.modules
        chat.warm_up()
        print(before, "openai" in sys.modules)
        """
    )

    assert shown.split() == ["False", "True"]
