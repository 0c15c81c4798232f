"""The definition prior: a name's reference page outranks a changelog and an index page that
mention it, over real stores and HTML read by the real reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.loaders import HtmlReader
from ragloom.retrieval import (
    DefinitionPrior,
    FullTextRetriever,
    HybridRetriever,
    Retriever,
    VectorRetriever,
)
from ragloom.retrieval.definitions import MAX_QUESTION_NAMES, code_names, defined_names
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, ChromaVectorStore
from tests.helpers.hashing_embedder import HashingEmbedder

# The changelog repeats the question's words and gives another value, as release notes do;
# the index page lists the name among others; the reference page defines it.
PAGES = {
    "pragma.html": """<title>Pragma statements</title><h2>PRAGMA spill_limit</h2>
<pre>PRAGMA schema.spill_limit;
PRAGMA schema.spill_limit = N;</pre>
<p>Query or change how many pages a connection may hold before it writes them out. It is
2000 pages unless changed, for each open database file.</p>""",
    "releaselog.html": """<title>Release 3.9.0</title><h2>2015-10-14 (3.9.0)</h2>
<ul><li>Change the default spill limit set by PRAGMA spill_limit to 500 pages.</li>
<li>Other small changes to the query planner and to the default spill limit.</li></ul>""",
    "keywords.html": """<title>Keyword index</title><h1>Index</h1>
<ul><li>spill</li><li>spill_limit</li><li>spill size</li><li>default</li><li>limit</li></ul>""",
}
QUESTION = "What is the default spill limit set by PRAGMA spill_limit?"


def _corpus(tmp_path: Path) -> list[Chunk]:
    chunks: list[Chunk] = []
    for number, (name, html) in enumerate(PAGES.items()):
        path = tmp_path / name
        path.write_text(f"<html><head></head><body>{html}</body></html>", encoding="utf-8")
        pages = HtmlReader().read(path)
        chunks.extend(TokenSplitter()(pages, source_id=f"s{number}", source_name=name))
    return chunks


def _hybrid(tmp_path: Path, prior: DefinitionPrior | None) -> HybridRetriever:
    tmp_path.mkdir()
    chunks = _corpus(tmp_path)
    embedder = HashingEmbedder()
    vectors = ChromaVectorStore("definitions", path=tmp_path / "chroma")
    vectors.add(chunks, embedder.embed_documents([c.text for c in chunks]))
    fulltext = BM25Store(tmp_path / "bm25")
    fulltext.add(chunks)
    retrievers: list[Retriever] = [
        VectorRetriever(store=vectors, embeddings=embedder),
        FullTextRetriever(store=fulltext),
    ]
    return HybridRetriever(retrievers=retrievers, prior=prior)


def _pages(retriever: Retriever, question: str = QUESTION) -> list[str]:
    return [hit.chunk.source_name for hit in retriever(question, top_k=3)]


def test_the_reference_page_comes_first_with_the_prior(tmp_path: Path) -> None:
    # Without the prior, lexical and vector scores prefer the changelog (the premise).
    without = _pages(_hybrid(tmp_path / "without", None))
    assert without[0] == "releaselog.html"
    with_prior = _pages(_hybrid(tmp_path / "with", DefinitionPrior()))
    assert with_prior[0] == "pragma.html"
    assert sorted(with_prior) == sorted(without)  # the same candidates, reordered


def _hit(text: str, n: int) -> RetrievedChunk:
    return RetrievedChunk(Chunk(f"c{n}", text, "s", "s.md"), 1.0 / (n + 1), {"x": 1.0})


def test_a_question_without_names_keeps_the_order() -> None:
    hits = [_hit(f"my_option\nPlain words about caching {n}.", n) for n in range(10)]
    assert DefinitionPrior()("how big is the cache?", hits, top_k=3) == hits[:3]


def test_only_the_order_changes() -> None:
    mention = "a mention of my_option in a long sentence of prose here"
    prose = "This sentence explains the option at length, with more than twelve words in it."
    hits = [_hit(f"{mention} {n}.", n) for n in (0, 1)]
    hits.append(_hit(f"my_option\n{prose}", 2))
    found = DefinitionPrior()("what is my_option?", hits, top_k=2)
    assert [h.chunk.id for h in found] == ["c2", "c0"]
    assert found[0] is hits[2] and found[0].found_by == {"x": 1.0}


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What does carray() assume?", ["carray"]),
        ("Compiled with -DSQLITE_THREADSAFE=2, which mode?", ["SQLITE_THREADSAFE"]),
        ("From which method of sqlite3_vfs does it read?", ["sqlite3_vfs"]),
        ("Is xRandomness called?", ["xRandomness"]),
        ("What does the .recover command create, e.g. a table?", [".recover"]),
        ("What is PRAGMA cache_size and CACHE_SIZE?", ["cache_size"]),
        ("How many tables may a join have?", []),
        ("Released in 3.40.0 or v2.1?", []),
    ],
)
def test_code_names(question: str, names: list[str]) -> None:
    assert code_names(question) == names


def test_a_long_question_gives_few_names() -> None:
    question = " ".join(f"name_{i}" for i in range(1000))
    assert len(code_names(question)) == MAX_QUESTION_NAMES


def test_what_counts_as_defining() -> None:
    prose = "This sentence explains the option at length, with more than twelve words in it."
    names = ["my_option", "other()"]
    assert defined_names(f"PRAGMA my_option;\n{prose}", names) == 1
    assert defined_names(f"void other();\nmy_option = 3\n{prose}", ["other", "my_option"]) == 2
    # Mentioned in prose only (a changelog's item), or in a list with no prose (an index).
    assert defined_names(f"{prose} It changed my_option.", names) == 0
    assert defined_names("my_option\nother_option\nthird_option", names) == 0
    # A whole word only: my_option_two is another name.
    assert defined_names(f"my_option_two\n{prose}", names) == 0


def test_the_prior_reorders_by_names_defined() -> None:
    prose = "This sentence explains the option at length, with more than twelve words in it."
    hits = [
        _hit(f"{prose} a_b and c_d mentioned.", 0),
        _hit(f"a_b\n{prose}", 1),
        _hit(f"a_b c_d\n{prose}", 2),
    ]
    order = DefinitionPrior()("compare a_b with c_d", hits, top_k=3)
    assert [h.chunk.id for h in order] == ["c2", "c1", "c0"]
