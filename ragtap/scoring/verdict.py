"""From scores to a verdict (BRIEF §1's interpretation rules, made explicit and ordered).

With supporting content (the injected case):
1. the answer is worded as a refusal                                  -> refusal
   (unless another of its claims is unsupported or contradicted: then unsupported_answer, the refusal kept as
   `refusal_phrase`: "the passages do not mention X; X is ..." adds what it invented)
2. SDQ, SDRD and SDA all pass                                         -> grounded
3. QA fails as well as a primary metric (the thesis's refusal rule),
   and no claim of the answer is supported by the evidence             -> refusal
4. SDRD fails (the support was not taken from the documents)          -> parametric
5. otherwise SDRD passes but SDA or SDQ fails: the model took its
   support from the documents and answered something else           -> unsupported_answer
A short answer whose words stand verbatim in the supporting content (extractive.py) counts as following it:
SDA passes for the verdict, and rule 3 does not apply (short answers score low QA without being refusals).

Claim by claim (scoring/claims.py), after the rules above:
SDRD and SDA also pass for rules 2-5 when the claims say so: every claim of the support found in the documents
(SDRD), every claim of the answer supported by the documents or the support (SDA).
6. a verdict of `grounded` stands only if every judged claim holds: an answer claim supported by neither the
   documents nor the support -> unsupported_answer; support claims not found in the documents -> parametric when
   they are more than `parametric_share` of the support's claims, else unsupported_answer.
An answer whose every judged claim only defers ("refer to your owner's manual", "it depends") answers nothing:
refusal, like refusal wording.

Without supporting content (the client owns the reply format, so nothing was injected) the answer's claims are
judged against the documents: refusal wording or only deferrals -> refusal; every claim supported -> grounded;
more than `parametric_share` of them unsupported -> parametric; some -> unsupported_answer.  An answer with no
judgeable claim ("Yes.", "1066") falls back to the whole-text rule: ARD passes (or the short answer stands
verbatim in a document) -> grounded; ARD fails -> parametric.

Explanations never quote the answer (they are exported without content capture): claims are named by number.
An interaction the proxy could not split (`unscored_reason`) is `unscored`, but its scores are still reported.

`poor_retrieval` is independent of the verdict: QRD below its threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtap.scoring.claims import ClaimThresholds, judged, unsupported
from ragtap.scoring.extractive import is_extractive
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR, RefusalDetector, is_deferral
from ragtap.types import PRIMARY_METRICS, Assessment, ClaimSupport, Scores, Thresholds, Verdict


def _passed(scores: Scores, thresholds: Thresholds) -> dict[str, bool]:
    return {name: value >= thresholds.of(name) for name, value in scores.as_dict().items() if value is not None}


def _fmt(scores: Scores, passed: dict[str, bool], names: tuple[str, ...]) -> str:
    parts = []
    for name in names:
        value = getattr(scores, name)
        if value is not None:
            parts.append(f"{name.upper()} {value:.2f} {'pass' if passed[name] else 'fail'}")
    return ", ".join(parts)


def _claim_numbers(claims: Sequence[ClaimSupport], of: str) -> str:
    """'claims 2, 4 of 5 (2 contradicted)': positions, never text (explanations are exported without content
    capture).  Contradicted claims are marked: the evidence they rest on says otherwise."""
    all_of = [c for c in claims if c.of == of and c.supported is not None]
    bad = [(i, c) for i, c in enumerate(all_of, 1) if c.supported is False]
    which = f"claim{'s' if len(bad) > 1 else ''} {', '.join(str(i) for i, _ in bad)} of {len(all_of)}"
    contradicted = [str(i) for i, c in bad if c.contradicted]
    return which + (f" (contradicted: {', '.join(contradicted)})" if contradicted else "")


def assess(
    scores: Scores,
    thresholds: Thresholds,
    answer: str | None,
    *,
    unscored_reason: str | None = None,
    refusal: RefusalDetector = DEFAULT_REFUSAL_DETECTOR,
    supporting: str | None = None,
    documents: tuple[str, ...] = (),
    claims: tuple[ClaimSupport, ...] = (),
    claim_thresholds: ClaimThresholds = ClaimThresholds(),
) -> Assessment:
    """`supporting` and `documents` (texts) are needed only for the short-extractive-answer rule; `claims` are
    the claim-by-claim judgements of the answer and the support (pipeline/batch.py)."""
    passed = _passed(scores, thresholds)
    poor_retrieval = None if scores.qrd is None else not passed["qrd"]

    def result(verdict: Verdict, why: str, phrase: str | None = None) -> Assessment:
        return Assessment(scores, passed, verdict, poor_retrieval, why, phrase, claims)

    if unscored_reason is not None or answer is None or scores.qa is None:
        return result(Verdict.UNSCORED, f"not scored: {unscored_reason or 'no answer'}")

    phrase = refusal.find(answer)
    answer_claims = judged(claims, "answer")
    answer_unsupported = unsupported(claims, "answer")
    if phrase is not None:
        # The phrase is answer text: kept on the Assessment for content-capturing exporters, not in `why`.  A
        # refusal does not hide what the answer adds after declining ("the passages do not mention X; X is ..."):
        # its own sentence is not judged (pipeline/batch.py), the others are.
        if answer_unsupported:
            which = _claim_numbers(claims, "answer")
            return result(Verdict.UNSUPPORTED_ANSWER, f"the answer declines (refusal wording), then states what the evidence does not support ({which})", phrase)
        return result(Verdict.REFUSAL, "the answer declines (refusal wording)", phrase)
    if answer_claims and all(is_deferral(c.text) for c in answer_claims):
        return result(Verdict.REFUSAL, "the answer only defers (to a manual, a dealer, 'it depends'): it answers nothing")

    if scores.sdq is None:  # no supporting content: judge the answer against the documents
        return _without_support(result, scores, passed, answer, documents, claims, claim_thresholds)

    primary = _fmt(scores, passed, PRIMARY_METRICS)
    extractive = is_extractive(answer, supporting)
    if extractive:
        primary += "; the answer stands verbatim in the support"
    # Claim by claim: every claim of the support found in the documents is SDRD's question answered directly (a
    # short support scores a low cosine against a long document it was copied from); every claim of the answer
    # supported by the documents or the support is SDA's.
    support_claims = judged(claims, "supporting")
    support_from_documents = bool(support_claims) and all(c.supported for c in support_claims)
    answer_follows = bool(answer_claims) and not answer_unsupported
    if support_from_documents and not passed.get("sdrd", False):
        primary += "; every claim of the support found in the documents"
    follows = {**passed, "sda": passed.get("sda", False) or extractive or answer_follows, "sdrd": passed.get("sdrd", False) or support_from_documents}
    if all(follows.get(name, False) for name in PRIMARY_METRICS):
        return _grounded_unless_a_claim_fails(result, claims, claim_thresholds, primary)
    # Rule 3 reads a low QA as a refusal; an answer with a claim the evidence supports states something, so it
    # is judged by the rules below instead.
    states_something = any(c.supported for c in answer_claims)
    if not passed.get("qa", False) and not extractive and not states_something:
        return result(Verdict.REFUSAL, f"answer off the question with poor primary metrics ({primary}, QA fail)")
    if not follows["sdrd"]:
        return result(Verdict.PARAMETRIC, f"support not taken from the documents; answer from model knowledge ({primary})")
    return result(Verdict.UNSUPPORTED_ANSWER, f"support taken from the documents but the answer does not follow it ({primary})")


def _without_support(result, scores: Scores, passed: dict[str, bool], answer: str, documents: tuple[str, ...],  # type: ignore[no-untyped-def]
                     claims: tuple[ClaimSupport, ...], thresholds: ClaimThresholds) -> Assessment:
    """The answer's claims against the documents; with no judgeable claim, the whole-text ARD rule."""
    detail = _fmt(scores, passed, ("ard", "qa"))
    answer_claims = judged(claims, "answer")
    if answer_claims:
        share = len(unsupported(claims, "answer")) / len(answer_claims)
        if share == 0:
            return result(Verdict.GROUNDED, f"every claim of the answer found in the documents ({len(answer_claims)} claims; {detail})")
        which = _claim_numbers(claims, "answer")
        if share > thresholds.parametric_share:
            return result(Verdict.PARAMETRIC, f"most of the answer not found in the documents ({which} unsupported; {detail})")
        return result(Verdict.UNSUPPORTED_ANSWER, f"part of the answer not found in the documents ({which} unsupported; {detail})")
    if passed.get("ard", False) or any(is_extractive(answer, doc) for doc in documents):
        return result(Verdict.GROUNDED, f"answer close to the documents ({detail}); no supporting content")
    return result(Verdict.PARAMETRIC, f"answer not found in the documents ({detail}); no supporting content")


def _grounded_unless_a_claim_fails(result, claims: tuple[ClaimSupport, ...], thresholds: ClaimThresholds, primary: str) -> Assessment:  # type: ignore[no-untyped-def]
    """Rule 6: the whole-text scores say grounded; each claim must agree."""
    if unsupported(claims, "answer"):
        which = _claim_numbers(claims, "answer")
        return result(Verdict.UNSUPPORTED_ANSWER, f"{which} of the answer supported by neither the documents nor the support ({primary})")
    support_claims, support_unsupported = judged(claims, "supporting"), unsupported(claims, "supporting")
    if support_unsupported:
        which = _claim_numbers(claims, "supporting")
        if len(support_unsupported) / len(support_claims) > thresholds.parametric_share:
            return result(Verdict.PARAMETRIC, f"most of the support not found in the documents ({which}; {primary})")
        return result(Verdict.UNSUPPORTED_ANSWER, f"part of the support not found in the documents ({which}; {primary})")
    return result(Verdict.GROUNDED, f"support from the documents, on the question, answer follows it ({primary})")
