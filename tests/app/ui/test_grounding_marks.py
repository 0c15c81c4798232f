"""The answer's sentences marked found or not found, within model_html's guarantees."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.grounding_report import GroundingReport, SentenceSupport, Specific
from ragloom.qa.grounding import check_grounding
from ragloom_app.ui.grounding_marks import grounded_answer_html, grounding_summary
from ragloom_app.ui.model_text import model_html

PASSAGE = {1: "The Zorblax reactor runs at 451 kelvin."}


class _Checker(HTMLParser):
    """Tags, in order, with their attributes; fails on a closing tag that closes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("br", "hr", "img"):
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (self.open, tag)
        self.open.pop()


def _parsed(markup: str) -> _Checker:
    checker = _Checker()
    checker.feed(markup)
    checker.close()
    assert checker.open == []
    return checker


def test_a_supported_and_an_unsupported_sentence_are_marked_apart() -> None:
    answer = "It runs at **451 kelvin** [1]. It was built in 1962 [1]. It is warm."
    markup = grounded_answer_html(answer, check_grounding(answer, PASSAGE))
    tags = _parsed(markup).tags
    supported = [a for t, a in tags if t == "span" and "rl-supported" in (a.get("class") or "")]
    unsupported = [a for t, a in tags if t == "span" and "rl-unsupported" in (a.get("class") or "")]
    assert supported and all(a["title"] == "Found in [1]" for a in supported)
    assert unsupported and all("1962" in (a["title"] or "") for a in unsupported)
    assert markup.count('class="rl-mark"') == 1  # once, after the unsupported sentence
    assert markup.index("1962") < markup.index("not in its sources") < markup.index("warm")
    assert "It is warm." in markup  # nothing to check: no mark


def test_the_words_read_as_model_html_renders_them() -> None:
    answer = "- It runs at `451` kelvin [1].\n- It was built in 1962 & <b>x</b> [1]."
    markup = grounded_answer_html(answer, check_grounding(answer, PASSAGE))
    _parsed(markup)
    assert "<b>" not in markup and "&lt;b&gt;x&lt;/b&gt;" in markup
    strip = _Texts()
    strip.feed(markup.replace("not in its sources", ""))
    plain = _Texts()
    plain.feed(model_html(answer))
    assert strip.text == plain.text


class _Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text = ""

    def handle_data(self, data: str) -> None:
        self.text += data


def test_a_title_naming_model_text_is_escaped() -> None:
    sentence = SentenceSupport(
        text='Use "<img src=x onerror=alert(1)>" [1].',
        supported=False,
        specifics=[Specific("<img src=x onerror=alert(1)>", "quote")],
        unsupported=['"><img src=x onerror=alert(1)>'],
        cited=[1],
    )
    report = GroundingReport("unsupported", [sentence])
    markup = grounded_answer_html(sentence.text, report)
    assert "<img" not in markup
    (_, attrs), *_ = [(t, a) for t, a in _parsed(markup).tags if t == "span"]
    assert attrs["title"] == 'Not in the passages it cites: "><img src=x onerror=alert(1)>'


def test_no_report_or_a_decline_renders_as_model_html() -> None:
    answer = "It runs at 900 kelvin [1]."
    assert grounded_answer_html(answer, None) == model_html(answer)
    declined = GroundingReport("unsupported", [], declined=True)
    assert grounded_answer_html(answer, declined) == model_html(answer)


def test_the_summary_says_the_verdict() -> None:
    assert grounding_summary(None) == ""
    report = check_grounding("It runs at 900 kelvin [1].", PASSAGE)
    assert grounding_summary(report) == "Grounding: no claim found in the passages it cites."


@settings(max_examples=150, deadline=2000)
@given(answer=st.text(alphabet=st.sampled_from(list("ab1 .*_`[]()<>&\"'\n-#|")), max_size=120))
def test_any_answer_is_marked_as_well_formed_html_with_its_text(answer: str) -> None:
    markup = grounded_answer_html(answer, check_grounding(answer, PASSAGE, "451"))
    _parsed(markup)
    marked, plain = _Texts(), _Texts()
    marked.feed(markup.replace("not in its sources", ""))
    plain.feed(model_html(answer))
    assert marked.text == plain.text


def test_a_reopened_conversation_shows_its_answers_marked_as_when_they_came() -> None:
    from ragloom_app.conversations import StoredMessage
    from ragloom_app.ui.render import chat_history

    answer = "It runs at 451 kelvin [1]. It was built in 1962 [1]."
    report = check_grounding(answer, {1: "It runs at 451 kelvin."})
    user, marked, unmarked = chat_history(
        [
            StoredMessage("user", "It was built in 1962?"),
            StoredMessage("assistant", answer, "fullqa", grounding=report),
            StoredMessage("assistant", answer, "fullqa"),  # stored before reports were kept
        ]
    )
    assert marked["content"] == grounded_answer_html(answer, report)
    assert "rl-unsupported" in marked["content"] and "rl-supported" in marked["content"]
    assert unmarked["content"] == model_html(answer)
    assert "rl-claim" not in user["content"]
