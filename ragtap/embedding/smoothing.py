"""Activation smoothing for the int8 MiniLM (SmoothQuant, Xiao et al. 2023): outlier channels moved into the weights.

The int8 model quantises each MatMul's input per run with ONE scale for the whole tensor.  BERT's activations
have a few outlier channels (all-MiniLM-L6-v2: channel 99 of the post-attention LayerNorm reaches 28 where the
median channel peaks at 2; one GELU output channel per layer reaches 14-25, on the [CLS] token), so that one
scale is set by a handful of channels and every other channel keeps only a few of its 256 levels.

For a MatMul y = x @ W, dividing input channel j by s_j and multiplying weight row j by s_j leaves y unchanged in
float; with s_j large for the outlier channels the input becomes flat (cheap to quantise per tensor) and the
weight absorbs the range, which its per-output-channel int8 scales handle well.  s_j = max|x_j|^a / max|W_j|^(1-a)
(SmoothQuant's rule), floored at the median s so that no quiet channel is magnified into a new outlier.

Where it applies: the query/key/value and feed-forward-up MatMuls (fed by a LayerNorm whose output is also the
residual, so the division is a `Mul` on the MatMul's branch only) and the feed-forward-down MatMul (fed by GELU,
nothing to fold into: a `Mul` too).  The attention-output MatMul's input has no outliers and is left alone.

Smoothing halves the feed-forward-down input's outlier (on [CLS]) but leaves it the loudest channel, and that
MatMul stays the most sensitive one.  So its `FLOAT_CHANNELS` loudest channels after smoothing are taken out of
the int8 MatMul (zero in its input and weight) and multiplied in float32 beside it (a `Gather` of 2 channels and a
(2 x 384) MatMul): as good as leaving the whole MatMul float, for a fraction of the cost (LLM.int8()'s
decomposition, with the outlier channels fixed at build time).  Together ~10% of the int8 model's CPU; measured
gains are in docs/embedder.md.

max|x_j| is measured at build time by the fp32 model on `calibration.txt`, text that ships with ragtap (prose
from its own documentation and the thesis examples: nothing downloaded, no evaluation data), one text per run
on one thread, so the build stays deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from tokenizers import Tokenizer

CALIBRATION_FILE = Path(__file__).with_name("calibration.txt")
# The MatMuls of a layer that are smoothed, and SmoothQuant's migration strength a for them (0.5-0.9 and
# per-kind settings were measured; docs/embedder.md).
SMOOTHED = ("qkv", "ffn_up", "ffn_down")
ALPHA = 0.8
# Each s is floored at this quantile of its MatMul's s: only loud channels are quietened.
FLOOR_QUANTILE = 0.5

# How many of each feed-forward-down MatMul's input channels run in float32: those still loudest after smoothing.
FLOAT_CHANNELS = 2


@dataclass(frozen=True)
class MatMulPlan:
    scale: np.ndarray  # float32, per input channel j: x_j / scale_j, weight row j * scale_j
    float_channels: np.ndarray  # int64 input channels left out of the int8 MatMul, multiplied in float32 beside it


# (layer index, MatMul kind) -> its plan; MatMuls without one are quantised as they are.
Plans = Mapping[tuple[int, str], MatMulPlan]


def calibration_texts() -> list[str]:
    return [line for line in CALIBRATION_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def activations(model: onnx.ModelProto, names: Sequence[str], tokenizer: Tokenizer, texts: Sequence[str]) -> Iterator[list[np.ndarray]]:
    """The values of the graph values `names`, text by text, with the fp32 `model` run one text at a time on one
    thread (so a build that calibrates on them stays deterministic)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for encoding in tokenizer.encode_batch(list(texts)):
        yield session.run(list(names), {"input_ids": np.asarray(encoding.ids, dtype=np.int64)[None, :]})


def activation_peaks(model: onnx.ModelProto, inputs: Mapping[tuple[int, str], str], tokenizer: Tokenizer, texts: list[str]) -> dict[tuple[int, str], np.ndarray]:
    """max |x_j| over every token of every text, per input channel j of each MatMul in `inputs` (key -> the
    graph value the MatMul reads), with the fp32 `model` run one text at a time."""
    names = list(dict.fromkeys(inputs.values()))
    peaks: dict[str, np.ndarray] = {}
    for values in activations(model, names, tokenizer, texts):
        for name, value in zip(names, values, strict=True):
            peak = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return {key: peaks[name] for key, name in inputs.items()}


def smoothing_plans(peaks: Mapping[tuple[int, str], np.ndarray], weights: Mapping[tuple[int, str], np.ndarray]) -> dict[tuple[int, str], MatMulPlan]:
    """A plan for every smoothed MatMul; `weights[key]` is its (in, out) matrix."""
    plans = {}
    for key, peak in peaks.items():
        if key[1] not in SMOOTHED:
            continue
        weight_peak = np.maximum(np.abs(weights[key]).max(axis=1).astype(np.float64), 1e-5)
        s = np.maximum(peak.astype(np.float64), 1e-5) ** ALPHA / weight_peak ** (1 - ALPHA)
        scale = np.maximum(s, np.quantile(s, FLOOR_QUANTILE)).astype(np.float32)
        loudest = np.argsort(peak / scale, kind="stable")[::-1][: FLOAT_CHANNELS if key[1] == "ffn_down" else 0]
        plans[key] = MatMulPlan(scale, np.sort(loudest).astype(np.int64))
    return plans
