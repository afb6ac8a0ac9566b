"""From scores to a verdict (BRIEF §1's interpretation rules, made explicit and ordered).

With supporting content (the injected case):
1. the answer is worded as a refusal                                  -> refusal
2. SDQ, SDRD and SDA all pass                                         -> grounded
3. QA fails as well as a primary metric (the thesis's refusal rule)   -> refusal
4. SDRD fails (the support was not taken from the documents)          -> parametric
5. otherwise SDRD passes but SDA or SDQ fails: the model took its
   support from the documents and answered something else           -> unsupported_answer
A short answer whose words stand verbatim in the supporting content (extractive.py) counts as following it:
SDA passes for the verdict, and rule 3 does not apply (short answers score low QA without being refusals).

Without supporting content (the client owns the reply format, so nothing was injected) the answer is judged
against the documents directly: refusal wording -> refusal; ARD passes (or the short answer stands verbatim in
a document) -> grounded; ARD fails -> parametric.
An interaction the proxy could not split (`unscored_reason`) is `unscored`, but its scores are still reported.

`poor_retrieval` is independent of the verdict: QRD below its threshold.
"""

from __future__ import annotations

from ragtap.scoring.extractive import is_extractive
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR, RefusalDetector
from ragtap.types import PRIMARY_METRICS, Assessment, Scores, Thresholds, Verdict


def _passed(scores: Scores, thresholds: Thresholds) -> dict[str, bool]:
    return {name: value >= thresholds.of(name) for name, value in scores.as_dict().items() if value is not None}


def _fmt(scores: Scores, passed: dict[str, bool], names: tuple[str, ...]) -> str:
    parts = []
    for name in names:
        value = getattr(scores, name)
        if value is not None:
            parts.append(f"{name.upper()} {value:.2f} {'pass' if passed[name] else 'fail'}")
    return ", ".join(parts)


def assess(
    scores: Scores,
    thresholds: Thresholds,
    answer: str | None,
    *,
    unscored_reason: str | None = None,
    refusal: RefusalDetector = DEFAULT_REFUSAL_DETECTOR,
    supporting: str | None = None,
    documents: tuple[str, ...] = (),
) -> Assessment:
    """`supporting` and `documents` (texts) are needed only for the short-extractive-answer rule."""
    passed = _passed(scores, thresholds)
    poor_retrieval = None if scores.qrd is None else not passed["qrd"]

    def result(verdict: Verdict, why: str, phrase: str | None = None) -> Assessment:
        return Assessment(scores, passed, verdict, poor_retrieval, why, phrase)

    if unscored_reason is not None or answer is None or scores.qa is None:
        return result(Verdict.UNSCORED, f"not scored: {unscored_reason or 'no answer'}")

    phrase = refusal.find(answer)
    if phrase is not None:
        return result(Verdict.REFUSAL, f"the answer declines ('{phrase}')", phrase)

    if scores.sdq is None:  # no supporting content: judge the answer against the documents
        detail = _fmt(scores, passed, ("ard", "qa"))
        if passed.get("ard", False) or any(is_extractive(answer, doc) for doc in documents):
            return result(Verdict.GROUNDED, f"answer close to the documents ({detail}); no supporting content")
        return result(Verdict.PARAMETRIC, f"answer not found in the documents ({detail}); no supporting content")

    primary = _fmt(scores, passed, PRIMARY_METRICS)
    extractive = is_extractive(answer, supporting)
    if extractive:
        primary += "; the answer stands verbatim in the support"
    follows = {**passed, "sda": passed.get("sda", False) or extractive}
    if all(follows.get(name, False) for name in PRIMARY_METRICS):
        return result(Verdict.GROUNDED, f"support from the documents, on the question, answer follows it ({primary})")
    if not passed.get("qa", False) and not extractive:
        return result(Verdict.REFUSAL, f"answer off the question with poor primary metrics ({primary}, QA fail)")
    if not passed.get("sdrd", False):
        return result(Verdict.PARAMETRIC, f"support not taken from the documents; answer from model knowledge ({primary})")
    return result(Verdict.UNSUPPORTED_ANSWER, f"support taken from the documents but the answer does not follow it ({primary})")
