"""How the chat shows an agent's progress and, after the answer, its plan and steps.

The UI draws both from the types of ``ragloom.events`` alone: a step's status is the label
its mode chose, a plan item's line its id and label, whatever the mode.
"""

import re
from typing import Any

from ragloom.events import (
    AnswerRecord,
    AnswerUsage,
    ModeChoice,
    PlanCreated,
    PlanItem,
    StepFinished,
    StepStarted,
)
from ragloom_app.ui.render import (
    MAX_SHOWN_LABEL_CHARS,
    MAX_SHOWN_PLAN_ITEMS,
    step_status,
    usage_html,
)


def test_a_step_reads_as_the_label_its_mode_chose_else_its_name_made_readable() -> None:
    assert step_status(StepStarted("E2:docsearch", label="Running #E2 (docsearch)")) == (
        "Running #E2 (docsearch)…"
    )
    assert step_status(StepStarted("my_step")) == "My step…"
    assert StepFinished("index:notes", 0.0).label == "Index: notes"


def _rewoo_record(*steps: Any) -> AnswerRecord:
    return AnswerRecord(
        answer="",
        mode="rewoo",
        steps=list(steps),
        usage=AnswerUsage(
            llm_calls=2, prompt_tokens=900, prompt_tokens_evaluated=900, completion_tokens=80,
            seconds=3.2,
        ),
    )  # fmt: skip


def test_the_cost_panel_lists_the_plan_then_each_timed_step_with_its_error() -> None:
    plan = PlanCreated(
        steps=[
            PlanItem("E1", tool="docsearch", input="reactor <temperature>"),
            PlanItem("E2", tool="calculator", input="#E1 - 273.15", depends_on=("E1",)),
        ],
        raw="",
        repaired=True,
    )
    record = _rewoo_record(
        plan,
        StepFinished("E1:docsearch", 0.05),
        StepFinished("E2:calculator", 0.0, error="bad"),
    )
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
    record = _rewoo_record(
        PlanCreated(steps=[PlanItem("E1", tool=hostile)], raw=""),
        StepFinished(f"E1:{hostile}", 0.1, error=hostile),
    )
    shown = usage_html(record)
    assert "<img" not in shown
    assert shown.count("&lt;img src=&quot;http://203.0.113.9/p.png&quot;&gt;") == 3


def test_a_plan_without_tools_lists_the_labels_its_mode_chose() -> None:
    plan = PlanCreated(
        steps=[PlanItem("Q1", "Who runs it?"), PlanItem("S1", "x", label="Check the dates")],
        raw="",
    )
    items = re.findall(r"<li>(.*?)(?=<li>|</ul>)", usage_html(_rewoo_record(plan)))
    assert items[1:] == [
        "<code>Q1</code> Who runs it?</li>",
        "<code>S1</code> Check the dates</li>",
    ]


def test_a_plan_of_a_plugin_dict_shape_shows_as_a_typed_one() -> None:
    # A mode written for an earlier version gave its plan as dicts.
    legacy: list[Any] = [{"id": "E1", "plan": "Find it.", "tool": "docsearch", "input": "x"}]
    typed = [PlanItem("E1", "Find it.", tool="docsearch", input="x")]
    assert PlanCreated(steps=legacy, raw="").steps == typed
    assert usage_html(_rewoo_record(PlanCreated(steps=legacy, raw=""))) == usage_html(
        _rewoo_record(PlanCreated(steps=typed, raw=""))
    )


def test_long_plans_and_labels_are_cut_with_the_limit_said() -> None:
    # A plugin's plan may be of any length; the panel lists the first steps and counts the rest.
    steps = [PlanItem(f"S{n}", "y" * 10_000) for n in range(MAX_SHOWN_PLAN_ITEMS + 7)]
    shown = usage_html(_rewoo_record(PlanCreated(steps=steps, raw=""), StepFinished("z" * 999, 1)))
    items = re.findall(r"<li>(.*?)(?=<li>|</ul>)", shown)
    assert len(items) == 1 + MAX_SHOWN_PLAN_ITEMS + 1 + 1
    assert items[1] == f"<code>S0</code> {'y' * (MAX_SHOWN_LABEL_CHARS - 1)}…</li>"
    assert items[-2] == f"… and 7 more steps, not shown (at most {MAX_SHOWN_PLAN_ITEMS} are)</li>"
    assert items[-1] == f"<code>{'z' * (MAX_SHOWN_LABEL_CHARS - 1)}…</code> 1.00 s</li>"
    long_status = step_status(StepStarted("s", label="w" * 5000))
    assert long_status == "w" * (MAX_SHOWN_LABEL_CHARS - 1) + "…"


def test_a_dropped_step_is_struck_through_with_why_and_an_added_one_says_so() -> None:
    plan = PlanCreated(
        steps=[
            PlanItem("E1", tool="calculator", input="<b>x</b>", status="dropped", reason="a <why>"),
            PlanItem("E2", tool="docsearch", input="Q?", status="added", reason="no search left"),
        ],
        raw="",
    )
    items = re.findall(r"<li>(.*?)(?=<li>|</ul>)", usage_html(_rewoo_record(plan)))
    assert items[1:] == [
        "<code>E1</code> <s>calculator[&lt;b&gt;x&lt;/b&gt;]</s> — not run: a &lt;why&gt;</li>",
        "<code>E2</code> docsearch[Q?] — added: no search left</li>",
    ]


def test_autos_choices_show_the_mode_and_why_escaped() -> None:
    route = ModeChoice(mode="fullqa", reason="single: no cue of another kind", kind="single")
    again = ModeChoice(
        mode="rewoo",
        reason="fullqa did not pass: its answer states what no cited passage holds: <b>9</b>",
        escalated_from="fullqa",
    )
    html_text = usage_html(
        _rewoo_record(
            StepFinished("route", 0.0, output=route), StepFinished("escalate", 0.0, output=again)
        )
    )
    assert "<code>route</code> <code>fullqa</code>: single: no cue of another kind" in html_text
    assert "<code>escalate</code> <code>rewoo</code>: fullqa did not pass" in html_text
    assert "&lt;b&gt;9&lt;/b&gt;" in html_text and "<b>9</b>" not in html_text
