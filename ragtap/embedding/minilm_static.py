"""QRD's windows embedded many to a run: the int8 MiniLM with *static* activation scales.

Why a second int8 model.  The windows QRD compares a question with (12 words of the passage closest to it) are the
most numerous texts of a cold interaction (2.9 of 8.9 on `bench/scoring.py`'s rows, ~15 wordpieces each), and the
default int8 model (`minilm_int8.py`) embeds one text per run: it quantises each MatMul's input with a scale
measured on that run (dynamic), so in a batch a text's vector would depend on its neighbours.  Here each MatMul's
input scale and zero point are fixed at build time, measured by the smoothed fp32 encoder on `calibration.txt`
(the text the smoothing is calibrated on), so every row of a batch is computed exactly as it would be alone:
texts of one length run together, without padding, and their token states are bitwise those of a run of one
(tests/test_embedding_static.py).  The mean pooling is done here, in numpy, text by text: onnxruntime's
`ReduceMean` over a batch sums in another order than over one text, which moves the last bits.

Why only the windows.  On bench-like short texts the static model is as close to the fp32 model as the dynamic
one (mean cosine 0.9990 against 0.9992), on long passages it is not (RAGTruth documents: minimum 0.994 against
0.999), and the verdict's thresholds were fitted on the dynamic model's vectors.  Windows are short, and QRD alone
reads them: no verdict and no claim outcome depends on them.  Cost and figures: docs/benchmarks.md, docs/embedder.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from safetensors import safe_open
from tokenizers import Encoding, Tokenizer

from ragtap.embedding.minilm import TOKEN_STATES, BertConfig
from ragtap.embedding.minilm_int8 import MS_DOMAIN, ModelRecipe, build_smoothed_encoder
from ragtap.embedding.smoothing import activations, calibration_texts

# Bump when the graph or the quantisation settings change: it is part of the cache key.
# v2: the word-embedding table is an input, not an initializer (fed from the packaged weights at each run).
STATIC_RECIPE = "minilm-int8-static-v2"
# The graph input that takes the word-embedding table (vocabulary x hidden, float32): a session holding its own
# copy of the 47 MB table measured 57 MB against 21 MB without it (`word_table` loads it once per embedder).
WORD_TABLE = "word_embeddings"
WEIGHTS_KEY = "embeddings.word_embeddings.weight"
# Rows per run: equal-length texts beyond this are split over runs, so a run's activations stay bounded (a micro-
# batch of 16 of bench/scoring.py's interactions has 46 windows in 8.4 groups of one length, 5.5 each).
MAX_ROWS = 64


def activation_ranges(model: onnx.ModelProto, values: Sequence[str], tokenizer: Tokenizer, texts: Sequence[str]) -> dict[str, tuple[float, float]]:
    """(min, max) of each graph value in `values` over every token of every text, the fp32 `model` run one text
    at a time; 0 always inside the range (the zero point must represent it exactly)."""
    names = list(dict.fromkeys(values))
    low = dict.fromkeys(names, 0.0)
    high = dict.fromkeys(names, 0.0)
    for outputs in activations(model, names, tokenizer, texts):
        for name, value in zip(names, outputs, strict=True):
            low[name] = min(low[name], float(value.min()))
            high[name] = max(high[name], float(value.max()))
    return {name: (low[name], high[name]) for name in names}


def quantised_matmuls(model: onnx.ModelProto, keep_float: Sequence[str]) -> list[onnx.NodeProto]:
    """The weight MatMuls (second input an initializer) that are not kept in float."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    skip = set(keep_float)
    return [node for node in model.graph.node if node.op_type == "MatMul" and node.name not in skip and node.input[1] in initializers]


def quantise_static(model: onnx.ModelProto, keep_float: Sequence[str], ranges: dict[str, tuple[float, float]]) -> onnx.ModelProto:
    """Every weight MatMul not in `keep_float` as QuantizeLinear (uint8, the input's calibrated scale and zero
    point) + com.microsoft `MatMulIntegerToFloat` (int8 weights, one symmetric scale per output channel)."""
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    quantised = {node.name for node in quantised_matmuls(model, keep_float)}  # unique (build_fused_encoder)
    nodes: list[onnx.NodeProto] = []
    added: list[onnx.TensorProto] = []
    for node in model.graph.node:
        if node.name not in quantised:
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(initializers[node.input[1]])  # (in, out)
        weight_scale = np.abs(weight).max(axis=0) / 127.0
        weight_scale[weight_scale == 0] = 1.0
        low, high = ranges[node.input[0]]
        scale = max(high - low, 1e-8) / 255.0
        zero_point = int(np.clip(round(-low / scale), 0, 255))
        stem = node.name
        added += [
            numpy_helper.from_array(np.clip(np.round(weight / weight_scale), -127, 127).astype(np.int8), f"{stem}_weight_q"),
            numpy_helper.from_array(weight_scale.astype(np.float32), f"{stem}_weight_scale"),
            numpy_helper.from_array(np.array(scale, dtype=np.float32), f"{stem}_input_scale"),
            numpy_helper.from_array(np.array(zero_point, dtype=np.uint8), f"{stem}_input_zero_point"),
        ]
        nodes.append(helper.make_node("QuantizeLinear", [node.input[0], f"{stem}_input_scale", f"{stem}_input_zero_point"], [f"{stem}_input_q"], name=f"{stem}_quantize"))
        nodes.append(helper.make_node(
            "MatMulIntegerToFloat",
            [f"{stem}_input_q", f"{stem}_weight_q", f"{stem}_input_scale", f"{stem}_weight_scale", f"{stem}_input_zero_point"],
            list(node.output), name=f"{stem}_int8", domain=MS_DOMAIN,
        ))
    used = {name for node in nodes for name in node.input}
    graph = model.graph
    kept = [tensor for tensor in graph.initializer if tensor.name in used] + added
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return model


def build_static(weights: dict[str, np.ndarray], cfg: BertConfig, tokenizer: Tokenizer) -> bytes:
    model, keep_float = build_smoothed_encoder(weights, cfg, tokenizer, pooled=False)
    ranges = activation_ranges(model, [node.input[0] for node in quantised_matmuls(model, keep_float)], tokenizer, calibration_texts())
    return table_as_input(quantise_static(model, keep_float, ranges), cfg).SerializeToString()


def table_as_input(model: onnx.ModelProto, cfg: BertConfig) -> onnx.ModelProto:
    """The word-embedding lookup reads the table from the `WORD_TABLE` input instead of an initializer."""
    graph = model.graph
    (lookup,) = [node for node in graph.node if node.op_type == "Gather" and node.input[1] == "input_ids"]
    table = lookup.input[0]
    lookup.input[0] = WORD_TABLE
    kept = [tensor for tensor in graph.initializer if tensor.name != table]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.input.append(helper.make_tensor_value_info(WORD_TABLE, TensorProto.FLOAT, ["vocabulary", cfg.hidden]))
    return model


def word_table(model_dir: Path) -> np.ndarray:
    """The packaged word-embedding table, read alone from the safetensors file (not the whole model)."""
    with safe_open(str(model_dir / "model.safetensors"), framework="np") as weights:
        return np.ascontiguousarray(weights.get_tensor(WEIGHTS_KEY), dtype=np.float32)


STATIC = ModelRecipe("all-MiniLM-L6-v2-int8-static", STATIC_RECIPE, build_static)


def length_groups(encodings: Sequence[Encoding]) -> list[list[int]]:
    """Indexes of texts of one wordpiece count, at most MAX_ROWS a group, the longest texts first."""
    by_length: dict[int, list[int]] = {}
    for index, encoding in enumerate(encodings):
        by_length.setdefault(len(encoding.ids), []).append(index)
    return [rows[start : start + MAX_ROWS] for _, rows in sorted(by_length.items(), reverse=True) for start in range(0, len(rows), MAX_ROWS)]


def run_group(session: ort.InferenceSession, table: np.ndarray, encodings: Sequence[Encoding], rows: Sequence[int], out: np.ndarray) -> None:
    """Embed texts of one length in one run into their rows of `out`: mean of the token states, then unit length
    (the same clamp on the norm as the graphs of `minilm.py`).  `table`: `word_table`'s array (onnxruntime reads a
    contiguous float32 input in place: no copy per run)."""
    input_ids = np.asarray([encodings[row].ids for row in rows], dtype=np.int64)
    states = session.run([TOKEN_STATES], {"input_ids": input_ids, WORD_TABLE: table})[0]
    for place, row in enumerate(rows):
        mean = states[place].mean(axis=0)  # one text's (seq, hidden) block: the same sum order in any batch
        out[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
