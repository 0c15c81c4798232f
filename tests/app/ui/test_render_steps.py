"""How the chat shows an agent's progress and, after the answer, its plan and steps."""

import re

from ragloom_app.ui.render import usage_html
from ragloom_app.ui.steps import step_label


def test_agent_steps_get_readable_status_lines() -> None:
    assert step_label("plan") == "Planning the tool calls"
    assert step_label("E2:docsearch") == "Running #E2 (docsearch)"
    assert step_label("step1:calculator") == "Step 1: calling calculator"
    assert step_label("think3") == "Thinking (step 3)"
    assert step_label("Q2") == "Answering sub-question 2"
    assert step_label("my_step") == "My step"


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
    shown = usage_html(record)
    assert shown.startswith(
        '<div class="rl-usage"><p><strong>2 LLM calls, 980 tokens, 3.2 s</strong>'
    )
    items = re.findall(r"<li>(.*?)(?=<li>|</ul>)", shown)
    assert items == [
        "<strong>Plan</strong> (repaired once):<ul>",
        "<code>E1</code> docsearch[reactor &lt;temperature&gt;]</li>",
        "<code>E2</code> calculator[#E1 - 273.15]</li>",
        "<code>E1:docsearch</code> 0.05 s</li>",
        "<code>E2:calculator</code> failed after 0.00 s: bad</li>",
    ]


def test_the_cost_panel_shows_model_text_as_text() -> None:
    # A plan, a tool name and an error are model text: no markup of theirs survives.
    hostile = '<img src="http://203.0.113.9/p.png">'
    record = {
        "mode": "rewoo",
        "steps": [
            {"step": "plan", "event": "plan", "plan": [{"id": "E1", "tool": hostile}]},
            {"step": f"E1:{hostile}", "event": "finished", "seconds": 0.1, "error": hostile},
        ],
    }
    shown = usage_html(record)
    assert "<img" not in shown
    assert shown.count("&lt;img src=&quot;http://203.0.113.9/p.png&quot;&gt;") == 3
