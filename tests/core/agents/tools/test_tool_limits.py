"""What a tool returns, bounded (``ragloom.agents.tools.limits``): the wrong types fail the
call alone as ``invalid_result``, text past its limit is cut saying so, a passage too long
to cite is dropped."""

from __future__ import annotations

from ragloom.agents.tools import ToolLimits, ToolResult
from ragloom.agents.tools.limits import bound_result
from ragloom.llms.base import Usage
from ragloom.schema import Chunk, RetrievedChunk


def test_bound_result_checks_every_part_and_leaves_a_good_result_as_it_is() -> None:
    limits = ToolLimits(content_chars=100, error_chars=80)
    good = ToolResult(content="fine", usage=Usage(1, 2))
    assert bound_result("t", good, limits) is good
    cut = bound_result("t", ToolResult(content="y" * 500), limits)
    assert len(cut.content) == 100 and bound_result("t", cut, limits) is cut
    long_error = bound_result("t", ToolResult.failure("busy", "z" * 500), limits)
    assert long_error.error is not None and len(long_error.error.message) == 80
    assert long_error.error.message.endswith("the limit is 80]")
    for bad, problem in [
        (ToolResult(content=b"bytes"), "its content is a bytes, not text"),  # type: ignore[arg-type]
        (ToolResult(content="a", sources=["a.md"]), "sources must be RetrievedChunk objects"),
        (ToolResult(content="a", usage={"tokens": 3}), "usage must be"),  # type: ignore[arg-type]
        (ToolResult.failure("", "no code"), "an error needs a code and a message"),
        (_with_source(chunk="oops"), "chunk must be a ragloom.schema.Chunk"),  # type: ignore[arg-type]
        (_with_source(text=None), "needs text for its id, its text"),  # type: ignore[arg-type]
        (_with_source(source_name=7), "needs text for its file's name"),  # type: ignore[arg-type]
        (_with_source(start=-1), "page, start and end must be whole numbers"),
        (_with_source(page="2"), "page, start and end must be whole numbers"),  # type: ignore[arg-type]
        (_with_source(score=float("nan")), "a finite score"),
        (_with_source(found_by=[1]), "a found_by mapping"),  # type: ignore[arg-type]
        (_with_source(found_by={"bm25": "high"}), "maps retriever names to finite scores"),  # type: ignore[dict-item]
    ]:
        error = bound_result("t", bad, limits).error
        assert error is not None and error.code == "invalid_result" and problem in error.message


def _with_source(**changes: object) -> ToolResult:
    """A result citing one passage, with ``changes`` to the passage or its chunk."""
    chunk_fields = {"id": "c", "text": "Text.", "source_id": "s", "source_name": "a.md"}
    chunk_fields.update(
        {k: v for k, v in changes.items() if k not in ("chunk", "score", "found_by")}
    )
    chunk = changes.get("chunk", Chunk(**chunk_fields))  # type: ignore[arg-type]
    source = RetrievedChunk(
        chunk=chunk,  # type: ignore[arg-type]
        score=changes.get("score", 1.0),  # type: ignore[arg-type]
        found_by=changes.get("found_by", {}),  # type: ignore[arg-type]
    )
    return ToolResult(content="a", sources=[source])


def test_a_passage_too_long_to_cite_is_dropped_and_the_others_kept() -> None:
    """Cut, its offsets would point at the wrong span: a plugin's 5 MB passage would
    reach the citation and the stored conversation."""
    limits = ToolLimits(source_chars=100)
    result = ToolResult(
        content="a",
        sources=[
            _with_source().sources[0],
            _with_source(text="x" * 101).sources[0],
            _with_source(source_name="n" * 101).sources[0],
        ],
    )
    kept = bound_result("t", result, limits)
    assert kept.ok and [s.chunk.text for s in kept.sources] == ["Text."]
