"""How the chat shows an agent's progress and, after the answer, its plan and steps."""

from ragloom_app.ui.chat_tab import _step_label
from ragloom_app.ui.render import usage_markdown


def test_agent_steps_get_readable_status_lines() -> None:
    assert _step_label("plan") == "Planning the tool calls"
    assert _step_label("E2:docsearch") == "Running #E2 (docsearch)"
    assert _step_label("step1:calculator") == "Step 1: calling calculator"
    assert _step_label("think3") == "Thinking (step 3)"
    assert _step_label("Q2") == "Answering sub-question 2"
    assert _step_label("my_step") == "My step"


def test_the_cost_panel_lists_the_plan_then_each_timed_step_with_its_error() -> None:
    record = {
        "mode": "rewoo",
        "usage": {"llm_calls": 2, "prompt_tokens": 900, "completion_tokens": 80, "seconds": 3.2},
        "steps": [
            {
                "step": "plan",
                "event": "plan",
                "repaired": True,
                "plan": [
                    {"id": "E1", "tool": "docsearch", "input": "reactor <temperature>"},
                    {"id": "E2", "tool": "calculator", "input": "#E1 - 273.15"},
                ],
            },
            {"step": "E1:docsearch", "event": "finished", "seconds": 0.05},
            {"step": "E2:calculator", "event": "finished", "seconds": 0.0, "error": "bad"},
        ],
    }
    lines = usage_markdown(record).splitlines()
    assert lines[0].startswith("**2 LLM calls, 980 tokens, 3.2 s**")
    assert lines[2:] == [
        "- **Plan** (repaired once):",
        "  - `E1` docsearch[reactor &lt;temperature&gt;]",
        "  - `E2` calculator[#E1 - 273.15]",
        "- `E1:docsearch` 0.05 s",
        "- `E2:calculator` failed after 0.00 s: bad",
    ]
