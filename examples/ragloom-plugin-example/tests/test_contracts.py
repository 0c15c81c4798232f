"""The plugin against Ragloom's contracts (ragloom_app.testing), as a plugin's CI runs it."""

from pathlib import Path

import ragloom_plugin_example
from ragloom_plugin_example import DateCalcTool, RstReader, VerifiedReasoning

from ragloom_app.testing import (
    ReplayLLM,
    check_plugin,
    check_reader,
    check_reasoning,
    check_tool,
)

SAMPLE = Path(__file__).parent / "sample.rst"


def test_the_hooks_register_a_mode_a_tool_and_a_reader() -> None:
    loaded = check_plugin(ragloom_plugin_example)
    assert loaded.info.registered["reasonings"] == ["verified"]
    assert loaded.info.registered["tools"] == ["date_calc"]
    assert loaded.info.registered["readers"] == [".rst", ".rest"]
    assert loaded.info.registered["commands"] == ["rst-preview"]


def test_verified_keeps_supported_sentences_and_marks_the_others() -> None:
    llm = ReplayLLM(replies=["It runs at 451 kelvin [1]. It was built on Mars by robots [1]."])
    record = check_reasoning(VerifiedReasoning, llm=llm)
    assert record["answer"] == (
        "It runs at 451 kelvin [1]. It was built on Mars by robots [1] (unsupported)."
    )
    verify = next(s for s in record["steps"] if s["step"] == "verify" and "output" in s)
    assert verify["output"]["unsupported"] == 1


def test_verified_leaves_a_decline_unmarked() -> None:
    """FullQA's grounding check declines an answer whose claims its passages do not hold;
    the decline is Ragloom's own words, not sentences to mark (unsupported)."""
    llm = ReplayLLM(replies=["It was built on Mars in 1969 by 42 robots [1]."])
    record = check_reasoning(VerifiedReasoning, llm=llm)
    assert record["grounding"]["declined"], record["grounding"]
    assert "(unsupported)" not in record["answer"]
    assert not [s for s in record["steps"] if s["step"] == "verify"]


def test_date_calc_counts_days_and_fails_with_codes() -> None:
    check_tool(
        DateCalcTool,
        {"start": "2024-01-01", "end": "2024-03-01"},
        expect="60 days",
        bad_input={"start": "yesterday", "end": "2024-03-01"},
    )
    tool = DateCalcTool()
    assert tool.invoke("2024-01-31 + 30 days").content.startswith(
        "2024-01-31 + 30 days = 2024-03-01"
    )
    assert tool.invoke({"start": "2024-01-01"}).error.code == "invalid_arguments"
    assert tool.invoke({"start": "9999-12-31", "add_days": 1}).error.code == "out_of_range"


def test_rst_reader_keeps_the_words_and_drops_the_markup() -> None:
    (page,) = check_reader(RstReader(), SAMPLE, expect="runs at 451 kelvin")
    assert "=====" not in page.text and "comment" not in page.text
    assert "flushed every 90 days" in page.text
