"""ChromaVectorStore against a real embedded Chroma (and a real `chroma run` server)."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragloom.schema import Chunk
from ragloom.stores import (
    ChromaVectorStore,
    StoreUnavailableError,
    VectorStore,
    chroma_client,
    chroma_http_client,
)
from tests.helpers.outbound import recorded_hosts
from tests.helpers.ports import free_port

DIM = 16

# --- helpers --------------------------------------------------------------------------------


def unit_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_chunks(n: int, source_id: str = "src-a", prefix: str = "c") -> list[Chunk]:
    return [
        Chunk(
            id=f"{prefix}{i}",
            text=f"text of chunk {prefix}{i}",
            source_id=source_id,
            source_name=f"{source_id}.pdf",
            page=i + 1,
            start=10 * i,
            end=10 * i + 9,
        )
        for i in range(n)
    ]


@pytest.fixture
def store(tmp_path: Path) -> ChromaVectorStore:
    return ChromaVectorStore("test_chunks", path=tmp_path / "chroma")


# --- tests ----------------------------------------------------------------------------------


def test_is_a_vector_store(store: ChromaVectorStore) -> None:
    assert isinstance(store, VectorStore)


def test_empty_store(store: ChromaVectorStore) -> None:
    assert store.count() == 0
    assert store.ids() == set()
    assert store.query(unit_vectors(1)[0], k=5) == []


def test_add_then_query_returns_nearest_with_cosine_similarity(store: ChromaVectorStore) -> None:
    chunks, vectors = make_chunks(20), unit_vectors(20)
    store.add(chunks, vectors)

    hits = store.query(vectors[7], k=5)

    assert len(hits) == 5
    best, score = hits[0]
    assert best == chunks[7]  # text and every metadata field survive the round trip
    assert score == pytest.approx(1.0, abs=1e-5)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    expected = sorted(((float(vectors[i] @ vectors[7]), i) for i in range(20)), reverse=True)
    assert [c.id for c, _ in hits] == [f"c{i}" for _, i in expected[:5]]
    assert scores == pytest.approx([s for s, _ in expected[:5]], abs=1e-4)


def test_space_is_cosine_not_l2(store: ChromaVectorStore) -> None:
    vectors = unit_vectors(3)
    store.add(make_chunks(3), vectors)
    # A scaled query has the same cosine similarity; under L2 it would be far away.
    (chunk, score), *_ = store.query(vectors[1] * 25.0, k=1)
    assert chunk.id == "c1"
    assert score == pytest.approx(1.0, abs=1e-5)


def test_k_is_respected_and_may_exceed_count(store: ChromaVectorStore) -> None:
    store.add(make_chunks(4), unit_vectors(4))
    assert len(store.query(unit_vectors(1, seed=9)[0], k=2)) == 2
    assert len(store.query(unit_vectors(1, seed=9)[0], k=50)) == 4
    assert store.query(unit_vectors(1, seed=9)[0], k=0) == []


def test_source_ids_filter(store: ChromaVectorStore) -> None:
    a, b = make_chunks(5, "src-a", "a"), make_chunks(5, "src-b", "b")
    vectors = unit_vectors(10)
    store.add(a + b, vectors)

    hits = store.query(vectors[0], k=10, source_ids=["src-b"])
    assert {c.source_id for c, _ in hits} == {"src-b"}
    assert len(hits) == 5
    both = store.query(vectors[0], k=10, source_ids={"src-a", "src-b"})
    assert len(both) == 10
    assert store.query(vectors[0], k=10, source_ids=[]) == []
    assert store.query(vectors[0], k=10, source_ids=["unknown"]) == []


def test_upsert_replaces_an_existing_id(store: ChromaVectorStore) -> None:
    chunks, vectors = make_chunks(3), unit_vectors(3)
    store.add(chunks, vectors)
    new_vector = unit_vectors(1, seed=42)
    replaced = Chunk(id="c1", text="new text", source_id="src-z", source_name="z.txt")
    store.add([replaced], new_vector)

    assert store.count() == 3
    (chunk, score), *_ = store.query(new_vector[0], k=1)
    assert chunk == replaced
    assert score == pytest.approx(1.0, abs=1e-5)


def test_repeated_id_in_one_batch_keeps_the_last(store: ChromaVectorStore) -> None:
    first = Chunk(id="x", text="first", source_id="s", source_name="s")
    last = Chunk(id="x", text="last", source_id="s", source_name="s")
    vectors = unit_vectors(2)
    store.add([first, last], vectors)
    assert store.count() == 1
    assert store.query(vectors[1], k=1)[0][0].text == "last"


def test_add_checks_the_embedding_shape(store: ChromaVectorStore) -> None:
    with pytest.raises(ValueError, match="embedding matrix"):
        store.add(make_chunks(3), unit_vectors(2))
    store.add([], np.zeros((0, DIM), dtype=np.float32))  # nothing to do, no error
    assert store.count() == 0


def test_adds_are_batched_under_the_client_limit(
    store: ChromaVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    monkeypatch.setattr(store.client, "get_max_batch_size", lambda: 4)
    collection = store._get_collection()
    original = collection.upsert

    def spy(**kwargs: object) -> None:
        sizes.append(len(kwargs["ids"]))  # type: ignore[arg-type]
        original(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(collection, "upsert", spy)
    store.add(make_chunks(10), unit_vectors(10))
    assert sizes == [4, 4, 2]
    assert store.count() == 10
    assert store.ids() == {f"c{i}" for i in range(10)}  # ids() pages by the same limit


def test_delete_delete_source_ids_count(store: ChromaVectorStore) -> None:
    store.add(make_chunks(3, "src-a", "a") + make_chunks(3, "src-b", "b"), unit_vectors(6))
    assert store.ids() == {"a0", "a1", "a2", "b0", "b1", "b2"}

    store.delete(["a0", "b2", "does-not-exist"])
    assert store.ids() == {"a1", "a2", "b0", "b1"}
    assert store.count() == 4

    store.delete_source("src-b")
    assert store.ids() == {"a1", "a2"}
    store.delete_source("src-never")
    assert store.count() == 2


def test_drop_empties_the_store_and_it_stays_usable(store: ChromaVectorStore) -> None:
    store.add(make_chunks(3), unit_vectors(3))
    store.drop()
    assert store.count() == 0
    store.drop()  # idempotent
    store.add(make_chunks(2), unit_vectors(2))
    assert store.count() == 2


def test_a_store_recovers_when_another_object_dropped_its_collection(tmp_path: Path) -> None:
    first = ChromaVectorStore("shared_name", path=tmp_path)
    second = ChromaVectorStore("shared_name", path=tmp_path)
    first.add(make_chunks(2), unit_vectors(2))
    assert second.count() == 2
    first.drop()
    assert second.count() == 0
    assert second.query(unit_vectors(1)[0], k=3) == []


def test_collections_are_independent(tmp_path: Path) -> None:
    one = ChromaVectorStore("index_one", path=tmp_path)
    two = ChromaVectorStore("index_two", path=tmp_path)
    one.add(make_chunks(3), unit_vectors(3))
    assert two.count() == 0
    assert one.client is two.client  # one cached client per folder


def test_persistence_across_store_objects_and_processes(tmp_path: Path) -> None:
    chunks, vectors = make_chunks(30), unit_vectors(30)
    ChromaVectorStore("persisted", path=tmp_path).add(chunks, vectors)

    again = ChromaVectorStore("persisted", path=tmp_path)
    assert again.count() == 30
    assert again.query(vectors[3], k=1)[0][0] == chunks[3]

    # A fresh process proves the data is on disk, not only in this process's client.
    np.save(tmp_path / "q.npy", vectors[12])
    script = textwrap.dedent(
        f"""
        import numpy as np
        from ragloom.stores import ChromaVectorStore
        store = ChromaVectorStore("persisted", path={str(tmp_path)!r})
        hit = store.query(np.load({str(tmp_path / "q.npy")!r}), k=1)[0][0]
        print(store.count(), hit.id, hit.page)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["30", "c12", "13"]


def test_chroma_client_is_cached_per_path(tmp_path: Path) -> None:
    assert chroma_client(tmp_path) is chroma_client(str(tmp_path / "." / ""))
    assert chroma_client(tmp_path / "other") is not chroma_client(tmp_path)


def test_constructor_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ChromaVectorStore("valid_name")
    with pytest.raises(ValueError, match="exactly one"):
        ChromaVectorStore("valid_name", path=tmp_path, client=chroma_client(tmp_path))
    for bad in ("ab", "-abc", "abc-", "a b c", "a..b"):
        with pytest.raises(ValueError, match="collection name"):
            ChromaVectorStore(bad, path=tmp_path)
    assert not (tmp_path / "x").exists()
    ChromaVectorStore("lazy_one", path=tmp_path / "x")  # constructing touches nothing
    assert not (tmp_path / "x").exists()


def test_no_network_connection_while_adding_and_querying(tmp_path: Path) -> None:
    with recorded_hosts() as hosts:
        store = ChromaVectorStore("offline", path=tmp_path)
        store.add(make_chunks(5), unit_vectors(5))
        store.query(unit_vectors(1)[0], k=3, source_ids=["src-a"])
        store.delete_source("src-a")
        store.drop()
    assert hosts == []


# --- server mode ----------------------------------------------------------------------------


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    executable = Path(sys.executable).with_name("chroma")
    if not executable.exists():
        executable = Path(shutil.which("chroma") or "missing")
    if not executable.exists():
        pytest.skip("the chroma command is not installed")
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    command = [str(executable), "run", "--path", str(tmp_path / "server")]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("chroma run did not start")
            time.sleep(0.05)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_server_mode_with_http_client(chroma_server: tuple[str, int]) -> None:
    host, port = chroma_server
    store = ChromaVectorStore("served", client=chroma_http_client(host, port))
    chunks = make_chunks(4, "src-a", "a") + make_chunks(4, "src-b", "b")
    vectors = unit_vectors(8)
    store.add(chunks, vectors)

    assert store.count() == 8
    hits = store.query(vectors[5], k=3, source_ids=["src-b"])
    assert hits[0][0] == chunks[5]
    assert {c.source_id for c, _ in hits} == {"src-b"}
    store.delete_source("src-a")
    assert store.ids() == {"b0", "b1", "b2", "b3"}
    store.drop()
    assert store.count() == 0


def test_a_chroma_server_that_is_not_there_is_said_to_be_away_in_fixed_words() -> None:
    """Nothing listens on the port: the client cannot be made, and the error says the
    server could not be reached, without its address (a user may read it)."""
    port = free_port()
    with pytest.raises(StoreUnavailableError) as away:
        chroma_http_client("127.0.0.1", port)
    assert str(away.value) == (
        "the Chroma server could not be reached (the connection was refused or failed)"
    )


class _GatewayWithoutServer(http.server.BaseHTTPRequestHandler):
    """A reverse proxy before a Chroma server that is restarting: 503 and an HTML page."""

    def _answer(self) -> None:
        page = b"<html><body><h1>503 Service Unavailable</h1>No server is available</body></html>"
        self.send_response(503)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:  # the test's output stays quiet
        pass


def test_a_proxy_answering_503_for_a_server_away_is_said_to_be_away() -> None:
    gateway = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GatewayWithoutServer)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    try:
        with pytest.raises(StoreUnavailableError) as away:
            chroma_http_client("127.0.0.1", gateway.server_address[1])
    finally:
        gateway.shutdown()
    assert (
        str(away.value)
        == "the Chroma server could not be reached (what stands before it answered 503)"
    )
    assert "<html>" not in str(away.value)
