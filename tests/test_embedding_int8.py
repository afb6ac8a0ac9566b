"""The int8 MiniLM (`embedder = "minilm"`, issue 16) against the fp32 reference (`"minilm-fp32"`): fidelity on
shared-data texts, the thesis examples' verdicts, a deterministic build cached on disk, and both names selectable.
Speed is not asserted here (bench/embedder.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragtap.config import load_config
from ragtap.embedding.factory import embedder_kinds, make_embedder
from ragtap.embedding.minilm import MiniLMEmbedder, locate_model_dir
from ragtap.embedding.minilm_int8 import CACHE_ENV, MiniLMInt8Embedder, build_fused_encoder, cache_key, quantise
from ragtap.evaluation.fidelity import compare, shared_interactions, thesis_interactions
from ragtap.pipeline.batch import texts_to_embed
from ragtap.wiring import build_policy

DATA = Path(os.environ.get("RAGTAP_DATA", str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data")))
needs_data = pytest.mark.skipif(not (DATA / "delucionqa" / "dev.jsonl").is_file(), reason=f"shared data not found at {DATA} (set RAGTAP_DATA)")


@pytest.fixture(scope="module")
def fp32() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> MiniLMInt8Embedder:
    return MiniLMInt8Embedder(cache_dir=tmp_path_factory.mktemp("model-cache"))


@needs_data
def test_vectors_stay_within_one_percent_of_fp32_on_shared_data(fp32: MiniLMEmbedder, int8: MiniLMInt8Embedder) -> None:
    """Every text the pipeline embeds for a sample of DelucionQA dev, WikiEval and SQuAD 2.0 interactions
    (questions, passages, answers, claims): the issue's gate is a mean cosine >= 0.99 to the fp32 vectors."""
    labelled = shared_interactions(DATA, delucionqa=20, wikieval=8, squad=30)
    texts = texts_to_embed([item for _, item in labelled], build_policy(load_config(environ={})))
    assert len(texts) > 300
    cosines = np.sum(fp32.embed(texts) * int8.embed(texts), axis=1)
    assert cosines.mean() >= 0.99, cosines.mean()
    assert cosines.min() >= 0.95, cosines.min()  # no single text far off (measured minimum on 2,943 texts: 0.968)


def test_thesis_examples_keep_their_verdicts(fp32: MiniLMEmbedder, int8: MiniLMInt8Embedder) -> None:
    report = compare(fp32, int8, thesis_interactions(), build_policy(load_config(environ={})))
    assert report.interactions == 5
    assert report.verdict_agreement == 1.0, report.disagreements
    assert report.mean_cosine >= 0.99


def test_build_is_deterministic() -> None:
    """Two builds from the packaged weights give the same bytes: a cache entry can only have one content."""
    model_dir = locate_model_dir()
    from safetensors.numpy import load_file

    from ragtap.embedding.minilm import BertConfig

    cfg = BertConfig.from_dir(model_dir)
    first = quantise(build_fused_encoder(load_file(str(model_dir / "model.safetensors")), cfg))
    second = quantise(build_fused_encoder(load_file(str(model_dir / "model.safetensors")), cfg))
    assert first == second


def test_model_is_cached_under_a_hash_of_its_inputs(tmp_path: Path, int8: MiniLMInt8Embedder) -> None:
    built = MiniLMInt8Embedder(cache_dir=tmp_path)
    cached = list(tmp_path.glob("*.onnx"))
    assert [p.name for p in cached] == [f"all-MiniLM-L6-v2-int8-{cache_key(locate_model_dir() / 'model.safetensors')}.onnx"]
    assert (tmp_path / (cached[0].name + ".sha256")).is_file()
    assert not list(tmp_path.glob("*.tmp"))  # written atomically: no leftover temporary file
    stamp = cached[0].stat().st_mtime_ns
    loaded = MiniLMInt8Embedder(cache_dir=tmp_path)  # served from the cache, not rebuilt
    assert cached[0].stat().st_mtime_ns == stamp
    texts = ["How do I reset my password?", "Open the settings page and choose 'Reset password'."]
    np.testing.assert_array_equal(built.embed(texts), loaded.embed(texts))
    np.testing.assert_array_equal(built.embed(texts), int8.embed(texts))  # a separately built one: same model


def test_damaged_cache_file_is_rebuilt(tmp_path: Path, int8: MiniLMInt8Embedder) -> None:
    MiniLMInt8Embedder(cache_dir=tmp_path)
    (cached,) = tmp_path.glob("*.onnx")
    intact = cached.read_bytes()
    cached.write_bytes(intact[: len(intact) // 2])  # e.g. a disk that filled up under another writer
    texts = ["The warranty covers the battery for eight years."]
    np.testing.assert_array_equal(MiniLMInt8Embedder(cache_dir=tmp_path).embed(texts), int8.embed(texts))
    assert cached.read_bytes() == intact


def test_unwritable_cache_still_gives_a_model(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    embedder = MiniLMInt8Embedder(cache_dir=blocker / "cache")
    assert embedder.embed(["hello"]).shape == (1, 384)


def test_both_names_are_registered_and_selectable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert {"minilm", "minilm-fp32"} <= set(embedder_kinds())
    assert load_config(environ={}).scoring.embedder == "minilm"
    assert load_config(environ={"RAGTAP_EMBEDDER": "minilm-fp32"}).scoring.embedder == "minilm-fp32"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    fast, reference = make_embedder("minilm"), make_embedder("minilm-fp32")
    assert fast.name == "all-MiniLM-L6-v2@onnx-int8" and reference.name == "all-MiniLM-L6-v2@onnx"
    assert list(tmp_path.glob("*.onnx"))  # the default cache directory follows RAGTAP_MODEL_CACHE
    texts = ["The warranty covers the battery for eight years."]
    assert float(np.dot(fast.embed(texts)[0], reference.embed(texts)[0])) >= 0.99


def test_texts_of_different_lengths_get_the_vectors_they_get_alone(int8: MiniLMInt8Embedder) -> None:
    """The int8 graph has no padding mask, so it must never see a padded batch: a short text embedded next to a
    long one (and after someone set batch_size) gets exactly the vector it gets alone."""
    short, long = "Refunds take five days.", " ".join(["The battery warranty covers eight years or 100,000 miles."] * 12)
    alone = int8.embed([short])[0]
    int8.batch_size = 8
    together = int8.embed([long, short, long])
    np.testing.assert_array_equal(together[1], alone)
    np.testing.assert_array_equal(together[0], together[2])


def test_texts_embedded_in_parallel_get_the_vectors_of_one_thread(int8: MiniLMInt8Embedder, tmp_path: Path) -> None:
    """`threads` > 1 runs several texts at once (longest first); every text still gets exactly the vector it gets
    alone, whatever ran beside it: the embedding cache and `ragtap score --jobs` rely on it."""
    parallel = MiniLMInt8Embedder(intra_op_threads=3, cache_dir=tmp_path)
    texts = [("The nitro hypervisor keeps every public API the same. " * (1 + i % 9))[: 40 + 37 * i] for i in range(24)]
    together = parallel.embed(texts)
    alone = np.stack([int8.embed([text])[0] for text in texts])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(parallel.embed(texts[:1]), alone[:1])  # one text: no helper thread needed
