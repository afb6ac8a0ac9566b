"""A cross-encoder exported to ONNX (an NLI or hallucination-detection model: HHEM, LettuceDetect-style, MiniCheck-
style classifiers), with its Hugging Face `tokenizer.json`, loaded from paths the user gives.

ragtap ships no such model and downloads none: the claim checks of scoring/ are lexical, and the one small verifier
the team trained did not beat them on held-out answers (docs/thresholds.md).  A user with a stronger model plugs it
in here.  The contract is the usual sequence-classification export: inputs `input_ids` and `attention_mask` (and
`token_type_ids` when the graph has it) of the pair encoded as (evidence, claim); the first output is logits of shape
[batch, labels] (softmax; one column is read as a sigmoid).  `supported_label` names the column of "supported" /
"entailment", `contradicted_label` the column of "contradiction" when the model has one (-1: none).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragtap.verifier.base import Verification, VerifierError


class OnnxCrossEncoder:
    def __init__(self, model: str, *, tokenizer: str = "", supported_label: int = 1, contradicted_label: int = -1,
                 max_tokens: int = 512, batch_size: int = 16) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path = Path(model).expanduser()
        tokenizer_path = Path(tokenizer).expanduser() if tokenizer else model_path.with_name("tokenizer.json")
        for what, path in (("model", model_path), ("tokenizer", tokenizer_path)):
            if not path.is_file():
                raise VerifierError(f"[claims.verifier] {what} file not found: {path}")
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as error:  # tokenizers raises its own Exception type for a malformed file
            raise VerifierError(f"[claims.verifier] {tokenizer_path} is not a Hugging Face tokenizer.json ({error})") from None
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the scoring thread's core; the other one serves requests
        try:
            self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as error:  # onnxruntime's errors are not a public hierarchy
            raise VerifierError(f"[claims.verifier] {model_path} cannot be loaded by onnxruntime ({str(error).splitlines()[0]})") from None
        self.inputs = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self.inputs:
            raise VerifierError(f"[claims.verifier] {model_path} takes {sorted(self.inputs)}, not input_ids and attention_mask")
        self.supported_label, self.contradicted_label, self.batch_size = supported_label, contradicted_label, batch_size
        self.name = f"onnx:{model_path.name}"

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verification]:
        out: list[Verification] = []
        for start in range(0, len(pairs), self.batch_size):
            out.extend(self._run(pairs[start : start + self.batch_size]))
        return out

    def _run(self, pairs: Sequence[tuple[str, str]]) -> list[Verification]:
        encodings = self.tokenizer.encode_batch([(evidence, claim) for evidence, claim in pairs])
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        logits = np.asarray(self.session.run(None, feed)[0], dtype=np.float64)
        if logits.ndim == 1 or logits.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-logits.reshape(-1)))
            return [Verification(float(x), None) for x in p]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs = exp / exp.sum(axis=1, keepdims=True)
        contradicted = self.contradicted_label
        return [Verification(float(row[self.supported_label]), float(row[contradicted]) if contradicted >= 0 else None) for row in probs]
