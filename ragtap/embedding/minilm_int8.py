"""The fast default embedder: all-MiniLM-L6-v2 with fused attention and int8 weights, same vectors within 1%.

Built from the same packaged safetensors as the fp32 model (`minilm.py`), nothing downloaded:

1. the encoder is assembled with onnxruntime's fused CPU operators (com.microsoft `MultiHeadAttention` and
   `FastGelu`) instead of the dozen generic nodes per attention block.  FastGelu is GELU's tanh approximation
   (BERT's own exact GELU uses erf): it measured 4% faster with the same mean cosine to fp32 (0.9943);
2. every weight MatMul (query/key/value, attention output, both feed-forward layers: 24 in all) is
   dynamically quantised to int8 with one scale per output channel (onnxruntime's `quantize_dynamic`), so
   onnxruntime runs them as `DynamicQuantizeMatMul` on the CPU's VNNI int8 units.  Per-tensor scales cost
   fidelity (mean cosine to fp32 0.959 on the shared data); per channel it is 0.994.  The word embeddings,
   the attention scores, softmax, GELU and the LayerNorms stay in float32;
3. onnxruntime's `SkipLayerNormFusion` is turned off: its fused kernel measured slower on one core than the
   plain Add + LayerNormalization it replaces (a quarter of the int8 model's time in a profile);
4. (recipe v4, issue 23) before quantisation, the few outlier activation channels that set the per-run activation
   scale are moved into the weights (SmoothQuant, `smoothing.py`, calibrated on text that ships with ragtap), and
   the two loudest input channels of each feed-forward-down MatMul are multiplied in float32 beside it.  Why: on
   long documents 8 of 600 verdicts flipped with v3 (SDQ, a one-sentence support against the question, sits at
   its threshold) because a (support, question) cosine moved by 0.010 on average; v4 moves it by 0.003 (mean
   cosine to fp32 on those texts 0.9942 -> 0.9993, minimum 0.980 -> 0.996) for ~10% more int8 CPU.  Numbers and
   what else was tried: docs/embedder.md.

The quantised model is cached on disk (`RAGTAP_MODEL_CACHE`, else `$XDG_CACHE_HOME/ragtap` or
`~/.cache/ragtap`) under a name made of a hash of its inputs: the weights file, the recipe version and the
onnx/onnxruntime versions that built it, and the calibration text.  The build is deterministic (same inputs, same bytes), so a cache
shared by several processes can only ever hold one content per name; it is written atomically.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from ragtap.embedding.minilm import (
    OPSET,
    OUTPUT,
    TOKEN_STATES,
    BertConfig,
    MiniLMEmbedder,
    _embeddings,
    _Graph,
    _layer_norm,
)
from ragtap.embedding.smoothing import CALIBRATION_FILE, Plans, activation_peaks, calibration_texts, smoothing_plans

# Bump when the graph or the quantisation settings change: it is part of the cache key.
# v5: v4 without the attention_mask input (the same vectors, bit for bit).
RECIPE = "minilm-int8-v5"
MS_DOMAIN = "com.microsoft"
CACHE_ENV = "RAGTAP_MODEL_CACHE"
_Task = TypeVar("_Task")


def default_cache_dir() -> Path:
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragtap"


@dataclass
class _Linears:
    """Builds the weight MatMuls: x @ W.T, the bias left to the fused operator that follows (FastGelu, Add before
    LayerNorm).  With a `MatMulPlan` (`smoothing.py`, exact in float) the input is divided by the plan's scale and
    the weight rows multiplied by it, and the plan's float channels are taken out of the MatMul and multiplied in
    float32 beside it.  Recorded for the calibration: every MatMul's input and (in, out) weight."""

    g: _Graph
    plans: Plans
    inputs: dict[tuple[int, str], str] = field(default_factory=dict)
    weights: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)
    float_nodes: list[int] = field(default_factory=list)  # places in `g.nodes` of MatMuls that must stay float

    def __call__(self, key: tuple[int, str], x: str, weight: np.ndarray) -> str:
        self.inputs[key] = x
        matrix = self.weights[key] = np.ascontiguousarray(weight.T)
        if (plan := self.plans.get(key)) is None:
            return self.g.op("MatMul", x, self.g.const(matrix))
        inverse = (1 / plan.scale).astype(np.float32)
        smoothed = (matrix * plan.scale[:, None]).astype(np.float32)
        # A float channel is zero in the int8 MatMul's input (so it no longer sets its scale) and in its weight.
        inverse[plan.float_channels] = 0
        smoothed[plan.float_channels] = 0
        product = self.g.op("MatMul", self.g.op("Mul", x, self.g.const(inverse)), self.g.const(smoothed))
        if not plan.float_channels.size:
            return product
        channels = self.g.op("Gather", x, self.g.const(plan.float_channels), axis=-1)
        self.float_nodes.append(len(self.g.nodes))
        return self.g.op("Add", product, self.g.op("MatMul", channels, self.g.const(np.ascontiguousarray(matrix[plan.float_channels]))))

    def float_node_names(self) -> list[str]:
        return [self.g.nodes[index].name for index in self.float_nodes]


def build_fused_encoder(weights: dict[str, np.ndarray], cfg: BertConfig, plans: Plans | None = None, *, pooled: bool = True) -> tuple[onnx.ModelProto, _Linears]:
    """The fp32 encoder with fused attention and GELU: same inputs and output as `minilm.build_encoder`, but for
    unpadded input only (one text per run, or texts of equal length), so it takes no `attention_mask`: attention
    and the mean pooling read every token.
    `plans`: the smoothing of `smoothing.py` (exact in float).  Also returned: what the MatMuls read and which
    must stay float.  `pooled=False`: the output is the last layer's token states (`TOKEN_STATES`, batch x seq x
    hidden), for a caller that pools them itself (`minilm_static.py`).

    (Tried and not kept: onnxruntime's packed-QKV layout for MultiHeadAttention is not implemented on the CPU;
    the plain-operator attention of `minilm.py` and the fused `Attention`/`QAttention` measured slower.)"""
    g = _Graph()
    linear = _Linears(g, plans or {})
    x = _embeddings(g, weights, cfg, "input_ids")
    for i in range(cfg.layers):
        layer = f"encoder.layer.{i}"
        p = f"{layer}.attention.self"
        # One GEMM for query, key and value; MultiHeadAttention applies the 1/sqrt(head_dim) scaling itself.
        qkv_weight = np.concatenate([weights[f"{p}.query.weight"], weights[f"{p}.key.weight"], weights[f"{p}.value.weight"]])
        qkv_bias = np.concatenate([weights[f"{p}.query.bias"], weights[f"{p}.key.bias"], weights[f"{p}.value.bias"]])
        qkv = g.op("Add", linear((i, "qkv"), x, qkv_weight), g.const(qkv_bias))
        q, k, v = g.op_n("Split", 3, qkv, axis=-1, num_outputs=3)
        # No padding mask: the model is run one text at a time (see MiniLMInt8Embedder), and without a mask
        # onnxruntime's CPU kernel may take its flash-attention path (12% faster than batches of 2 with a mask).
        context = g.op("MultiHeadAttention", q, k, v, domain=MS_DOMAIN, num_heads=cfg.heads)

        out = f"{layer}.attention.output"
        projected = g.op("Add", linear((i, "attention_output"), context, weights[f"{out}.dense.weight"]), g.const(weights[f"{out}.dense.bias"]))
        x = _layer_norm(g, g.op("Add", projected, x), weights, f"{out}.LayerNorm", cfg.layer_norm_eps)

        up = linear((i, "ffn_up"), x, weights[f"{layer}.intermediate.dense.weight"])
        activated = g.op("FastGelu", up, g.const(weights[f"{layer}.intermediate.dense.bias"]), domain=MS_DOMAIN)
        down = g.op("Add", linear((i, "ffn_down"), activated, weights[f"{layer}.output.dense.weight"]), g.const(weights[f"{layer}.output.dense.bias"]))
        x = _layer_norm(g, g.op("Add", down, x), weights, f"{layer}.output.LayerNorm", cfg.layer_norm_eps)
    if pooled:
        g.nodes.append(helper.make_node("Identity", [_mean_pool_unpadded(g, x)], [OUTPUT]))
        output = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", cfg.hidden])
    else:
        g.nodes.append(helper.make_node("Identity", [x], [TOKEN_STATES]))
        output = helper.make_tensor_value_info(TOKEN_STATES, TensorProto.FLOAT, ["batch", "seq", cfg.hidden])
    # The quantiser names its new nodes after the old ones: give every node a stable, unique name.
    for index, node in enumerate(g.nodes):
        node.name = f"{node.op_type}_{index}"

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2-fused", inputs, [output], g.initializers)
    standard = helper.make_opsetid("", OPSET)
    opsets = [standard, helper.make_opsetid(MS_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for([standard]), producer_name="ragtap")
    return model, linear


def _mean_pool_unpadded(g: _Graph, x: str) -> str:
    """`minilm._mean_pool_normalised` for input without padding: the mean over every token, then unit length (the
    same clamp on the norm), the same vectors bit for bit.  Without the mask's Cast, Mul and token count a run has
    six nodes fewer: 2.4% less CPU per text on the texts of `bench/scoring.py` (a run costs ~0.4 ms before its first
    token, so node count matters for the short texts ragtap embeds one at a time)."""
    mean = g.op("ReduceMean", x, g.const(np.array([1])), keepdims=0)
    norm = g.op("ReduceL2", mean, g.const(np.array([1])), keepdims=1)
    return g.op("Div", mean, g.op("Max", norm, g.const(np.float32(1e-12))))


def build_smoothed_encoder(weights: dict[str, np.ndarray], cfg: BertConfig, tokenizer: Tokenizer, *, pooled: bool = True) -> tuple[onnx.ModelProto, list[str]]:
    """The fused encoder with its activation outliers moved into the weights or into float32, calibrated on
    `calibration.txt`, and the names of the MatMuls that must not be quantised."""
    plain, linears = build_fused_encoder(weights, cfg)
    peaks = activation_peaks(plain, linears.inputs, tokenizer, calibration_texts())
    model, linears = build_fused_encoder(weights, cfg, smoothing_plans(peaks, linears.weights), pooled=pooled)
    return model, linears.float_node_names()


class _DropPreprocessingHint(logging.Filter):
    """The quantiser logs a hint to run its shape pre-processing on every call (on the root logger); the fused
    graph needs none of it, so the hint would only puzzle whoever reads the first start's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def quantise(model: onnx.ModelProto, keep_float: Sequence[str] = ()) -> bytes:
    """int8 weights, one scale per output channel, activations quantised per call (dynamic)."""
    # Imported here: onnxruntime.quantization is only needed when the cache is empty.
    from onnxruntime.quantization import QuantType, quantize_dynamic

    hint = _DropPreprocessingHint()
    logging.getLogger().addFilter(hint)
    try:
        with tempfile.TemporaryDirectory(prefix="ragtap-quantise-") as tmp:
            target = Path(tmp) / "model.onnx"
            quantize_dynamic(
                model,
                target,
                per_channel=True,
                reduce_range=False,  # VNNI has no u8*s8 saturation problem; 7-bit weights cost fidelity (0.993 vs 0.994)
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul"],  # the weight MatMuls; the embedding Gather stays float
                nodes_to_exclude=list(keep_float),
                # The fused operators have no ONNX shape inference: tell the quantiser their outputs are float.
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
            return target.read_bytes()
    finally:
        logging.getLogger().removeFilter(hint)


def cache_key(weights_file: Path, recipe: str = RECIPE) -> str:
    digest = hashlib.sha256()
    with open(weights_file, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    digest.update(CALIBRATION_FILE.read_bytes())
    digest.update(f"|{recipe}|onnx {onnx.__version__}|onnxruntime {ort.__version__}".encode())
    return digest.hexdigest()[:24]


@dataclass(frozen=True)
class ModelRecipe:
    """A model built from the packaged weights and cached on disk: its file name's stem, the version that is part
    of its cache key, and how to build its bytes (from the weights, the model's config and its tokenizer)."""

    stem: str
    version: str
    build: Callable[[dict[str, np.ndarray], BertConfig, Tokenizer], bytes]


INT8 = ModelRecipe("all-MiniLM-L6-v2-int8", RECIPE, lambda weights, cfg, tokenizer: quantise(*build_smoothed_encoder(weights, cfg, tokenizer)))


def load_or_build(model_dir: Path, cfg: BertConfig, cache_dir: Path | None, tokenizer: Tokenizer, recipe: ModelRecipe = INT8) -> bytes:
    """The quantised model's bytes: from the cache when present and intact, else built from the packaged weights
    and cached.  An unwritable cache is not an error: the model is then built on every start."""
    weights_file = model_dir / "model.safetensors"
    cache_dir = cache_dir or default_cache_dir()
    path = cache_dir / f"{recipe.stem}-{cache_key(weights_file, recipe.version)}.onnx"
    digest_path = path.with_name(path.name + ".sha256")
    try:
        cached = path.read_bytes()
        # A file damaged on disk (or by hand) would otherwise stop every start: it is checked against the
        # digest written with it, and rebuilt when it does not match.
        if hashlib.sha256(cached).hexdigest() == digest_path.read_text().strip():
            return cached
    except OSError:
        pass
    model_bytes = recipe.build(load_file(str(weights_file)), cfg, tokenizer)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, model_bytes)
        _write_atomically(digest_path, hashlib.sha256(model_bytes).hexdigest().encode())
    except OSError:
        pass
    return model_bytes


def _write_atomically(path: Path, data: bytes) -> None:
    """Written under a unique name, then renamed: a concurrent reader never sees half a file."""
    fd, tmp_name = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, path)
    except OSError:
        Path(tmp_name).unlink(missing_ok=True)
        raise


class MiniLMInt8Embedder(MiniLMEmbedder):
    """all-MiniLM-L6-v2 with int8 weights (`embedder = "minilm"`, the default); `MiniLMEmbedder` is the fp32
    reference (`"minilm-fp32"`).  Same tokeniser and output as the fp32 model.

    One text per model run, so no padding is ever computed and attention needs no mask.  With int8 GEMMs the
    padding of a length-sorted batch costs more than larger GEMMs save: 908 shared-data texts on one core, texts
    per CPU second with a padding mask: batch 1 197-220, 2 208-227, 3 217, 4 204, 8 164; one text per run
    without the mask: 239-244.  Batches of texts of one exact length need no padding, but the activations are
    quantised per run with one scale for the whole input, so a text's vector would then depend on the texts it
    shares a run with (up to 0.047 per component on long passages): the embedding cache and `ragtap score --jobs`
    rely on a text always getting the same vector, so it stays one text per run.

    `threads` (the `intra_op_threads` of the other embedders): how many runs go at once, each on one onnxruntime
    thread.  Splitting one short run over threads costs more in synchronisation than it saves (2,504 SQuAD texts:
    18% more CPU with two intra-op threads, 9% with two runs at once), so a call with many texts runs several texts
    in parallel instead, the longest first so that the last runs to finish are short ones.
    """

    name = "all-MiniLM-L6-v2@onnx-int8"
    disabled_optimizers = ("SkipLayerNormFusion",)

    def __init__(self, *, intra_op_threads: int = 1, cache_dir: str | Path | None = None) -> None:
        if intra_op_threads < 1:
            raise ValueError("intra_op_threads must be >= 1")
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.threads = intra_op_threads
        super().__init__(batch_size=1, intra_op_threads=1)
        self._static: tuple[ort.InferenceSession, np.ndarray] | None = None  # embed_windows' model, at its first call
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # A process forked from this one (`ragtap score --jobs`) has none of the pool's threads: it makes its own.
        forget = weakref.WeakMethod(self._forget_pool)
        os.register_at_fork(after_in_child=lambda: (method := forget()) is not None and method())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch_fast(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids), reverse=True)

        def run(row: int) -> None:
            input_ids = np.asarray(encodings[row].ids, dtype=np.int64)[None, :]
            out[row] = self._session.run([OUTPUT], {"input_ids": input_ids})[0][0]

        self._run_all(run, order)
        return out

    def embed_windows(self, texts: Sequence[str]) -> np.ndarray:
        """QRD's windows: the static-scale int8 model (`minilm_static.py`), texts of one length in one run.  A text
        gets the same vector whatever else is embedded with it, but not the vector `embed` gives it."""
        from ragtap.embedding.minilm_static import length_groups, run_group

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, table = self._windows_model()
        encodings = self._tokenizer.encode_batch_fast(list(texts))
        self._run_all(lambda rows: run_group(session, table, encodings, rows, out), length_groups(encodings))
        return out

    def _run_all(self, run: Callable[[_Task], None], tasks: Sequence[_Task]) -> None:
        """run(task) for every task, taken in the order given (the callers put the longest first); on `threads`
        threads when there is more than one task."""
        helpers = min(self.threads, len(tasks)) - 1
        if helpers < 1:
            for task in tasks:
                run(task)
            return
        # Every thread (this one too) takes the next task until none is left: onnxruntime releases the GIL while
        # it runs, so the tasks run in parallel.
        pending = iter(tasks)
        lock = threading.Lock()

        def drain() -> None:
            while True:
                with lock:
                    task = next(pending, None)
                if task is None:
                    return
                run(task)

        futures = [self._executor().submit(drain) for _ in range(helpers)]
        try:
            drain()
        finally:
            for future in futures:
                future.result()  # waits for the helpers, and re-raises what failed in them

    def _windows_model(self) -> tuple[ort.InferenceSession, np.ndarray]:
        """The static model's session and its word-embedding table, built (or read from the model cache) at the
        first call: a proxy whose QRD needs no windows never pays for them."""
        with self._pool_lock:
            if self._static is None:
                from ragtap.embedding.minilm import locate_model_dir
                from ragtap.embedding.minilm_static import STATIC, word_table

                model_dir = locate_model_dir()
                session = self._new_session(load_or_build(model_dir, self.config, self._cache_dir, self._tokenizer, STATIC))
                self._static = (session, word_table(model_dir))
            return self._static

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="ragtap-embed")
            return self._pool

    def _forget_pool(self) -> None:
        self._pool = None
        self._pool_lock = threading.Lock()

    def _model_bytes(self, model_dir: Path) -> bytes:
        return load_or_build(model_dir, self.config, self._cache_dir, self._tokenizer)


if __name__ == "__main__":  # scripts/setup.sh: build the quantised model at install time, into the cache
    from ragtap.embedding.minilm import locate_model_dir
    from ragtap.embedding.minilm_static import STATIC

    MiniLMInt8Embedder().embed_windows(["QRD's windows: the static-scale model is built and cached too."])
    weights = locate_model_dir() / "model.safetensors"
    print(f"ragtap: int8 MiniLM cached in {default_cache_dir()} ({cache_key(weights)}, windows {cache_key(weights, STATIC.version)})")
