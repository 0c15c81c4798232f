"""The evidence panel: which retrievers found a chunk, and the quoted span marked, escaped."""

from ragloom.events import Citation
from ragloom_app.ui import render

TEXT = "  The <b>reactor</b> runs at 451 kelvin & more.  "


def _citation(**changes: object) -> Citation:
    values: dict = {
        "number": 1,
        "source": "zorblax.md",
        "page": None,
        "text": TEXT,
        "chunk_id": "c1",
        "score": 0.0325,
        "found_by": {"vector": 0.6234, "fulltext": 7.14},
        "highlight": (TEXT.index("runs"), TEXT.index(" &")),
    }
    values.update(changes)
    return Citation(**values)


def test_found_by_names_each_retriever_with_its_score() -> None:
    assert render.found_by_text({"vector": 0.6234, "fulltext": 7.14}) == (
        "found by vector 0.62 · full-text 7.1"
    )
    assert render.found_by_text({"fulltext": 0.5}) == "found by full-text 0.50"
    assert render.found_by_text({}) == "" and render.found_by_text(None) == ""


def test_the_quoted_span_is_marked_and_everything_escaped() -> None:
    html = render.evidence_html([_citation()])
    assert "found by vector 0.62 · full-text 7.1" in html
    assert "<mark>runs at 451 kelvin</mark>" in html
    assert "The &lt;b&gt;reactor&lt;/b&gt; <mark>" in html
    assert "</mark> &amp; more.</div>" in html
    assert "<b>" not in html


def test_a_span_read_back_from_the_database_is_a_list() -> None:
    stored = {
        "number": 2,
        "source": "a.md",
        "text": "alpha beta gamma",
        "found_by": {"vector": 0.5},
        "highlight": [6, 10],
    }
    assert "alpha <mark>beta</mark> gamma" in render.evidence_html([stored])


def test_a_span_that_does_not_fit_the_text_marks_nothing() -> None:
    for bad in [(5, 500), (4, 2), ("a", 3), (1, 2, 3), None]:
        html = render.evidence_html([_citation(highlight=bad)])
        assert "<mark>" not in html and "The &lt;b&gt;reactor" in html
    old = {"number": 1, "source": "a.md", "text": "no found_by or highlight stored"}
    html = render.evidence_html([old])
    assert "found by" not in html and "no found_by or highlight stored" in html


def test_indices_table_shows_settings_and_visibility() -> None:
    html = render.indices_html(
        [
            {
                "name": "Team <notes>",
                "files": 1,
                "chunk_size": 120,
                "chunk_overlap": 10,
                "extensions": [".md", ".txt"],
                "visibility": "shared",
            }
        ]
    )
    assert "Team &lt;notes&gt;" in html and "1 file<" in html
    assert ".md .txt" in html and "shared" in html and ">120<" in html
    assert "There is no index yet." in render.indices_html([])
