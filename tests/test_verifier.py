"""`[claims.verifier]`: a claim verifier the user brings, an ONNX cross-encoder with its tokenizer.json.

The test builds a tiny one of its own (onnx.helper, and a word-level tokenizer from the `tokenizers` library): it
scores a pair by summing one weight per token, so "supported" is certain except where the pair holds the word
"moonbeam", which weighs it down.  Loaded from the paths a config names, it must judge again the claims the lexical
rules decided, through the real scoring path, and leave explicit contradictions alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ragtap.config import ConfigError, load_config
from ragtap.pipeline.batch import assess_batch
from ragtap.types import ClaimOutcome, Document, Interaction, Verdict
from ragtap.wiring import build_policy

from conftest import ENV

MANUAL = ("Loosen the lug nuts a half turn before raising the vehicle. Raise the vehicle with the jack until the tire "
          "clears the ground. Tighten the lug nuts to 120 Nm in a star pattern.")
VOCABULARY = ["[PAD]", "[UNK]", "moonbeam"]


def build_model(folder: Path, *, labels: int = 2, inputs: tuple[str, ...] = ("input_ids", "attention_mask")) -> Path:
    """A cross-encoder in miniature: logits = [-s, s], s = the sum over the pair's tokens of a weight per token
    (unknown words +1, "moonbeam" -40), masked by attention_mask."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCABULARY)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))

    weights = numpy_helper.from_array(np.array([0.0, 1.0, -40.0], dtype=np.float32), "weights")
    ids, mask = inputs
    nodes = [
        helper.make_node("Gather", ["weights", ids], ["per_token"]),
        helper.make_node("Cast", [mask], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "mask_float"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis"], ["s"], keepdims=1),
        helper.make_node("Neg", ["s"], ["minus_s"]),
        helper.make_node("Concat", ["minus_s", "s"] if labels == 2 else ["s"], ["logits"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny-cross-encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in inputs],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", labels])],
        [weights, numpy_helper.from_array(np.array([1], dtype=np.int64), "axis")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = folder / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def policy_with(tmp_path: Path, **verifier: object):  # type: ignore[no-untyped-def]
    config = tmp_path / "ragtap.toml"
    lines = ["[claims.verifier]"] + [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in verifier.items()]
    config.write_text("\n".join(lines).replace("'", '"') + "\n")
    return build_policy(load_config(config, environ=ENV))


def test_the_verifier_judges_again_what_the_rules_decided(tmp_path: Path, embedder) -> None:
    model = build_model(tmp_path)
    policy = policy_with(tmp_path, model=str(model))
    answer = ("Loosen the lug nuts a half turn before raising the vehicle. "
              "Raise the vehicle with the jack until the moonbeam tire clears the ground. "
              "Tighten the lug nuts to 95 Nm in a star pattern.")
    item = Interaction(question="How do I change a tire?", documents=(Document(MANUAL),), answer=answer)
    result = assess_batch([item], embedder, policy)[0]
    first, second, third = [c for c in result.claims if c.of == "answer"]
    # the rules found the first two claims in the manual; the verifier agrees with the first only
    assert (first.outcome, first.reason) == (ClaimOutcome.SUPPORTED, "verifier") and first.verifier_score == pytest.approx(1.0)
    assert (second.outcome, second.reason) == (ClaimOutcome.NOT_FOUND, "verifier") and second.verifier_score < 1e-6
    # an explicit contradiction is not handed to the verifier
    assert (third.outcome, third.reason, third.verifier_score) == (ClaimOutcome.CONTRADICTED, "contradicted", None)
    assert result.verdict is Verdict.PARAMETRIC and "claims 2, 3 of 3 (contradicted: 3)" in result.explanation  # 2 of 3 unsupported
    # the same answer without the verifier: the second claim is supported by the rules
    plain = assess_batch([item], embedder, build_policy(load_config(environ=ENV)))[0]
    assert [c.outcome for c in plain.claims if c.of == "answer"][1] is ClaimOutcome.SUPPORTED


def test_a_model_with_one_logit_is_read_as_a_sigmoid(tmp_path: Path, embedder) -> None:
    from ragtap.verifier.onnx_cross_encoder import OnnxCrossEncoder

    verifier = OnnxCrossEncoder(str(build_model(tmp_path, labels=1)))
    good, bad = verifier.verify([("a b", "c"), ("a moonbeam", "c")])
    assert good.supported == pytest.approx(1 / (1 + np.exp(-3.0))) and good.contradicted is None
    assert bad.supported < 1e-12


def test_a_verifier_that_cannot_be_used_is_one_line_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^\[claims.verifier\] model file not found: .*missing.onnx$"):
        policy_with(tmp_path, model=str(tmp_path / "missing.onnx"))
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"tokenizer.json is not a Hugging Face tokenizer.json"):
        policy_with(tmp_path, model=str(tmp_path / "junk.onnx"))
    model = build_model(tmp_path, inputs=("ids", "mask"))
    with pytest.raises(ConfigError, match=r"takes \['ids', 'mask'\], not input_ids and attention_mask"):
        policy_with(tmp_path, model=str(model))
    with pytest.raises(ConfigError, match=r"^\[claims.verifier\]: unknown key\(s\) modle$"):
        policy_with(tmp_path, modle="x.onnx")
