"""QRD's windows through the static-scale int8 model (`ragtap/embedding/minilm_static.py`): many windows to a run,
each getting exactly the vector it gets alone, close to the fp32 model's, cached on disk under a name of its own
and in memory apart from the plain texts' vectors; an embedder without `embed_windows` embeds windows as any text.
Speed is not asserted here (bench/scoring.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.embedding.base import WindowEmbedder, embed_windows
from ragtap.embedding.cache import CachedEmbedder
from ragtap.embedding.minilm import BertConfig, MiniLMEmbedder, load_tokenizer, locate_model_dir
from ragtap.embedding.minilm_int8 import MiniLMInt8Embedder, cache_key
from ragtap.embedding.minilm_static import MAX_ROWS, STATIC, build_static
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.scoring.passages import split_passages, word_windows
from ragtap.types import Document, Interaction

# Written for this test: a made-up ferry timetable notice, 96 words.
NOTICE = (
    "From 1 April the Kestrel ferry leaves Portavon at 07:15, 11:40 and 16:05 on weekdays and at 09:30 and 15:00 "
    "at weekends. Crossings take about fifty minutes in calm weather and may be cancelled when the wind exceeds "
    "force seven. Foot passengers pay 6.50 pounds each way; cars up to five metres long cost 32 pounds including "
    "the driver. Bicycles travel free but must be wheeled aboard after the vehicles. Tickets bought online are "
    "valid on any sailing on the day printed, and season tickets are sold at the harbour office only."
)


def windows_of(text: str, words: int = 12) -> list[str]:
    return [text[start:end] for start, end in word_windows(text, 0, len(text), words)]


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> MiniLMInt8Embedder:
    return MiniLMInt8Embedder(cache_dir=tmp_path_factory.mktemp("model-cache"))


def test_a_window_gets_the_vector_it_gets_alone_whatever_runs_beside_it(int8: MiniLMInt8Embedder) -> None:
    """Texts of one length share a run; the activations' scales are fixed, so no text moves another's vector,
    not even in its last bit: the embedding cache and `ragtap score --jobs` rely on it."""
    windows = windows_of(NOTICE) + windows_of(NOTICE, 7) + windows_of(NOTICE, 20)
    together = int8.embed_windows(windows)
    alone = np.stack([int8.embed_windows([window])[0] for window in windows])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(int8.embed_windows(windows[::-1]), alone[::-1])
    # More texts of one length than one run holds: split over runs, still the same vectors.
    many = [f"Window number {i} of the Kestrel ferry notice." for i in range(MAX_ROWS + 9)]
    np.testing.assert_array_equal(int8.embed_windows(many)[[0, MAX_ROWS, MAX_ROWS + 8]], np.stack([int8.embed_windows([many[i]])[0] for i in (0, MAX_ROWS, MAX_ROWS + 8)]))
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)


def test_windows_in_parallel_get_the_vectors_of_one_thread(int8: MiniLMInt8Embedder, tmp_path: Path) -> None:
    parallel = MiniLMInt8Embedder(intra_op_threads=3, cache_dir=tmp_path)
    windows = windows_of(NOTICE) + windows_of(NOTICE, 5)
    np.testing.assert_array_equal(parallel.embed_windows(windows), int8.embed_windows(windows))


def test_windows_stay_close_to_the_fp32_model(int8: MiniLMInt8Embedder) -> None:
    """Measured when it was built: mean cosine to fp32 0.9991 on 200 twelve-word windows (the dynamic model's
    0.9993); on this notice's windows of every length QRD may use."""
    windows = windows_of(NOTICE) + windows_of(NOTICE, 8) + windows_of(NOTICE, 16)
    cosines = np.sum(MiniLMEmbedder().embed(windows) * int8.embed_windows(windows), axis=1)
    assert cosines.mean() >= 0.998, cosines.mean()
    assert cosines.min() >= 0.995, cosines.min()


def test_the_model_is_built_deterministically_and_cached_under_its_own_name(int8: MiniLMInt8Embedder, tmp_path: Path) -> None:
    int8.embed_windows(["builds the static model into the fixture's cache"])
    model_dir = locate_model_dir()
    weights = model_dir / "model.safetensors"
    cache = Path(int8._cache_dir)  # type: ignore[arg-type]
    name = f"{STATIC.stem}-{cache_key(weights, STATIC.version)}.onnx"
    assert (cache / name).is_file() and (cache / (name + ".sha256")).is_file()
    assert cache_key(weights, STATIC.version) != cache_key(weights)  # never confused with the dynamic model
    cfg = BertConfig.from_dir(model_dir)
    assert build_static(load_file(str(weights)), cfg, load_tokenizer(model_dir, cfg)) == (cache / name).read_bytes()


def test_a_plain_embedder_embeds_windows_as_any_text() -> None:
    plain = Counting()
    assert not isinstance(plain, WindowEmbedder)
    np.testing.assert_array_equal(embed_windows(plain, ["a window"]), plain.embed(["a window"]))


def test_the_cache_keeps_windows_apart_from_plain_texts() -> None:
    inner = CountingWithWindows()
    cached = CachedEmbedder(inner)
    plain = cached.embed(["the ferry leaves at 07:15"])
    window = cached.embed_windows(["the ferry leaves at 07:15", "the ferry leaves at 07:15"])
    assert inner.calls == [("embed", ["the ferry leaves at 07:15"]), ("embed_windows", ["the ferry leaves at 07:15"])]
    assert not np.array_equal(plain[0], window[0])  # the inner embedder's two vectors, each from its own path
    np.testing.assert_array_equal(window[0], window[1])
    np.testing.assert_array_equal(cached.embed_windows(["the ferry leaves at 07:15"])[0], window[0])  # a hit
    np.testing.assert_array_equal(cached.embed(["the ferry leaves at 07:15"])[0], plain[0])
    assert len(inner.calls) == 2 and (cached.hits, cached.misses) == (3, 2)


def test_assess_batch_embeds_qrd_windows_through_embed_windows() -> None:
    inner = CountingWithWindows()
    question = "How much does a car cost on the Kestrel ferry?"
    policy = ScoringPolicy(DEFAULT_THRESHOLDS)
    (assessment,) = assess_batch([Interaction(question, (Document(NOTICE),), "32 pounds.")], inner, policy)
    windowed = [texts for kind, texts in inner.calls if kind == "embed_windows"]
    passage = split_passages(NOTICE)[0].text
    assert len(windowed) == 1 and windowed[0] and all(window in passage for window in windowed[0])
    assert all(window not in texts for kind, texts in inner.calls if kind == "embed" for window in windowed[0])
    assert assessment.scores.qrd is not None
    # Without windows (qrd_window_words = 0) nothing goes through embed_windows.
    inner.calls.clear()
    assess_batch([Interaction(question, (Document(NOTICE),), "32 pounds.")], inner, dataclasses.replace(policy, qrd_window_words=0))
    assert [kind for kind, _ in inner.calls] == ["embed"]


@dataclass
class Counting:
    """A deterministic stand-in recording its calls."""

    name: str = "counting"
    dim: int = 8
    calls: list[tuple[str, list[str]]] = field(default_factory=list)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("embed", list(texts)))
        return vectors(texts, self.dim, salt=0)


@dataclass
class CountingWithWindows(Counting):
    """...with an `embed_windows` whose vectors differ from `embed`'s, as the static model's do."""

    def embed_windows(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(("embed_windows", list(texts)))
        return vectors(texts, self.dim, salt=1)


def vectors(texts: Sequence[str], dim: int, salt: int) -> np.ndarray:
    rows = [np.random.default_rng([salt, *text.encode()]).normal(size=dim) for text in texts]
    out = np.asarray(rows, dtype=np.float32).reshape(len(texts), dim)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
