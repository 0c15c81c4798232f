"""Property: whatever an upload holds, each file ends indexed, skipped or failed with a
reason, and the index's stores still agree.

Random bytes, random text in several encodings, random CSV and JSON shapes and random zips
of those, under random names (any Unicode) and extensions, go through the real pipeline:
readers in the readers sandbox, a real database, Chroma and BM25 (HashEmbeddings).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom_app.index.file import FileIndex
from tests.helpers.file_index import hash_file_index

EXTENSIONS = [".txt", ".md", ".csv", ".json", ".html", ".pdf", ".docx", ".zip", ".xyz", ""]

names = st.tuples(st.text(min_size=0, max_size=24), st.sampled_from(EXTENSIONS)).map("".join)
plain_text = st.text(max_size=600)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


leaf_contents = st.one_of(
    st.binary(max_size=1500),
    st.tuples(plain_text, st.sampled_from(["utf-8", "utf-16", "latin-1"])).map(
        lambda pair: pair[0].encode(pair[1], errors="replace")
    ),
    st.lists(st.lists(st.text(max_size=12), min_size=1, max_size=5), max_size=8).map(_csv),
    json_values.map(lambda value: json.dumps(value).encode()),
    plain_text.map(lambda text: f"<html><body><p>{text}</p></body></html>".encode()),
)


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in dict(members).items():  # a zip lists each name once
            # zipfile cuts a name at NUL (and fails on what is left empty); archives with
            # NUL in a name are tests/core/loaders/test_archive.py's, written byte by byte.
            archive.writestr(name.split("\x00")[0] or "unnamed", data)
    return out.getvalue()


zip_contents = st.lists(st.tuples(names, leaf_contents), max_size=4).map(_zip)
uploads = st.lists(st.tuples(names, st.one_of(leaf_contents, zip_contents)), min_size=1, max_size=4)

_COUNTER = itertools.count()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileIndex]:
    yield hash_file_index(tmp_path_factory.mktemp("properties"))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=uploads)
def test_every_file_ends_with_an_outcome_and_the_stores_agree(
    index: FileIndex, tmp_path_factory: pytest.TempPathFactory, files: list[tuple[str, bytes]]
) -> None:
    folder = tmp_path_factory.mktemp(f"upload{next(_COUNTER)}")
    paths = []
    for number, (_, data) in enumerate(files):
        # The bytes are on disk under a plain name; the upload's name is the random one.
        path = folder / f"{number}.bin"
        path.write_bytes(data)
        paths.append(path)
    outcomes = index.get_indexing_pipeline({}).run(paths, names=[name for name, _ in files])
    assert len(outcomes) >= len(files)
    for outcome in outcomes:
        assert outcome.status in {"indexed", "skipped", "failed"}, outcome
        if outcome.status == "indexed":
            assert outcome.chunks >= 1, outcome
        else:
            assert isinstance(outcome.reason, str) and outcome.reason.strip(), outcome
    report = index.check()
    assert report.clean, report.to_dict()
