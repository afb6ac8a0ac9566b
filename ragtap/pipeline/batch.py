"""Assess many interactions with one embedding call: collect the distinct texts, embed them, then score.

Micro-batching matters on a CPU embedder: one call over 40 texts is several times faster than 40 calls, and
retrieved documents recur across interactions, so de-duplicating texts saves work before the cache does.
The texts of one interaction are its question, answer and supporting content, the passages of its documents
(long documents cut to the embedder's window), and the claims (sentences, list items) of the answer and of the
supporting content; a one-sentence answer is its own claim, so it costs nothing extra.

A second, smaller call embeds QRD's windows: short windows of words inside the passage closest to each question
that share a word with it (`_question_windows`).  Which passage that is depends on the first call's vectors; a passage no longer than one
window adds nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ragtap.embedding.base import embed_windows
from ragtap.pipeline.limits import ScoringLimits, bound
from ragtap.scoring.claims import Claim, ClaimThresholds, Evidence, judge_claim, judge_short_answer, split_claims, verified
from ragtap.scoring.metrics import closest_passage, compute_scores
from ragtap.scoring.order import sequence_conflicts
from ragtap.scoring.passages import DEFAULT_MAX_WORDS, DEFAULT_QRD_WINDOW_WORDS, Passage, question_windows, split_passages
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR, RefusalDetector
from ragtap.scoring.replies import answered_against, judge_reply
from ragtap.scoring.verdict import assess
from ragtap.types import Assessment, ClaimSupport, Interaction, Thresholds

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder
    from ragtap.verifier.base import ClaimVerifier


@dataclass(frozen=True, slots=True)
class ScoringPolicy:
    thresholds: Thresholds
    refusal: RefusalDetector = DEFAULT_REFUSAL_DETECTOR
    claims: ClaimThresholds = field(default_factory=ClaimThresholds)
    passage_words: int = DEFAULT_MAX_WORDS  # documents longer than this are cut into passages
    claim_level: bool = True  # off: whole-text scores only (cheaper; no unsupported sentence can be named)
    limits: ScoringLimits = field(default_factory=ScoringLimits)
    verifier: ClaimVerifier | None = None  # [claims.verifier]: the user's model, judging the claims again
    qrd_window_words: int = DEFAULT_QRD_WINDOW_WORDS  # QRD also looks at windows this long (0: whole passages only)


class _TextTable:
    """Distinct texts in first-seen order, so each is embedded once per batch."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def add(self, text: str | None) -> int | None:
        if text is None:
            return None
        return self.rows.setdefault(text, len(self.rows))


@dataclass(slots=True)
class _Plan:
    """Where one interaction's texts sit in the batch's table of texts."""

    question: int | None
    answer: int | None
    supporting: int | None
    passages: list[Passage]
    passage_rows: list[int]
    documents: list[str]
    answer_claims: list[Claim]
    answer_claim_rows: list[int | None]  # None: a claim that is not judged (framing, refusal) is not embedded
    supporting_claims: list[Claim]
    supporting_claim_rows: list[int | None]


def _plan(item: Interaction, table: _TextTable, policy: ScoringPolicy) -> _Plan:
    item = bound(item, policy.limits)  # a guard: the proxy bounds what it submits already
    answer = item.answer if item.answer else None  # an empty answer is not scoreable
    supporting = item.supporting if item.supporting else None
    passages = [p for i, doc in enumerate(item.documents) for p in split_passages(doc.text, i, policy.passage_words)]
    passages = passages[: policy.limits.max_passages]
    # Claims are judged only against documents: without any there is nothing to ground on.
    judge = policy.claim_level and bool(passages)
    answer_claims = without_refusals(split_claims(answer), policy.refusal) if answer and judge else []
    supporting_claims = split_claims(supporting) if supporting and judge else []
    return _Plan(
        question=table.add(item.question),
        answer=table.add(answer),
        supporting=table.add(supporting),
        passages=passages,
        passage_rows=[table.add(p.text) for p in passages],  # type: ignore[misc]
        documents=[doc.text for doc in item.documents[: passages[-1].document + 1 if passages else 0]],
        answer_claims=answer_claims,
        answer_claim_rows=[_claim_row(table, c) for c in answer_claims],
        supporting_claims=supporting_claims,
        supporting_claim_rows=[_claim_row(table, c) for c in supporting_claims],
    )


def _claim_row(table: _TextTable, claim: Claim) -> int | None:
    return None if claim.not_judged is not None else table.add(claim.checked_text)


def without_refusals(claims: list[Claim], refusal: RefusalDetector) -> list[Claim]:
    """A sentence that declines ("the passages do not mention X") says nothing about the world: not judged.  The
    answer's other sentences still are (an answer may decline, then add what it invented)."""
    return [dataclasses.replace(c, not_judged="refusal") if c.not_judged is None and refusal.find(c.text) else c for c in claims]


def _claims(plan: _Plan, vectors: np.ndarray, policy: ScoringPolicy, question: str, answer_text: str | None) -> tuple[ClaimSupport, ...]:
    """The support's claims against the documents; the answer's against the documents and the support (an
    answer that follows its support follows the documents when the support's own claims hold)."""
    if not plan.passages:
        return ()
    documents = Evidence.of(plan.passages, vectors[plan.passage_rows], plan.documents, question)

    def vector(row: int | None) -> np.ndarray | None:
        return None if row is None else vectors[row]

    judged = [
        judge_claim(claim, vector(row), documents, policy.claims, of="supporting")
        for claim, row in zip(plan.supporting_claims, plan.supporting_claim_rows)
    ]
    evidence = documents
    support = [(c, row) for c, row in zip(plan.supporting_claims, plan.supporting_claim_rows) if row is not None]
    if support:
        extra = [Passage(-1, c.start, c.end, c.checked_text) for c, _ in support]
        evidence = Evidence.of([*plan.passages, *extra], vectors[plan.passage_rows + [row for _, row in support]], plan.documents, question,
                               documents.index)
    answer = [judge_claim(claim, vector(row), evidence, policy.claims) for claim, row in zip(plan.answer_claims, plan.answer_claim_rows)]
    answer = sequence_conflicts([c.checked_text for c in plan.answer_claims], answer, documents.index, plan.documents)
    if answer and question:
        answer[0] = answered_against(question, answer[0], documents.index)  # "Yes, ..." read with its question
    if answer_text and question and all(c.supported is None for c in answer):
        # Nothing judgeable alone: a one-word answer, or a yes/no reply, read with its question.
        short = judge_short_answer(answer_text, question, documents) or judge_reply(answer_text, question, documents.index)
        if short is not None:
            answer = [short]
    return (*answer, *judged)


def _question_windows(plans: Sequence[_Plan], questions: Sequence[str], vectors: np.ndarray, embedder: Embedder,
                      policy: ScoringPolicy) -> list[np.ndarray | None]:
    """Per interaction, the vectors of the windows of the passage closest to its question that share a word with
    it (None: no windows), all embedded in one call, by the embedder's `embed_windows` where it has one (the
    default MiniLM's runs many windows at once: `ragtap/embedding/minilm_static.py`)."""
    table = _TextTable()
    rows: list[list[int] | None] = []
    for plan, question in zip(plans, questions):
        closest = None if plan.question is None else closest_passage(vectors[plan.question], vectors[plan.passage_rows])
        windows = [] if closest is None else question_windows(plan.passages[closest], policy.qrd_window_words, question)
        rows.append([table.add(w.text) for w in windows] or None)  # type: ignore[misc]
    if not table.rows:
        return [None] * len(plans)
    window_vectors = embed_windows(embedder, list(table.rows))
    return [None if r is None else window_vectors[r] for r in rows]


def assess_batch(interactions: Sequence[Interaction], embedder: Embedder, policy: ScoringPolicy) -> list[Assessment]:
    table = _TextTable()
    plans = [_plan(item, table, policy) for item in interactions]
    vectors = embedder.embed(list(table.rows)) if table.rows else np.zeros((0, 1), dtype=np.float32)
    windows = _question_windows(plans, [item.question for item in interactions], vectors, embedder, policy)

    def row(index: int | None) -> np.ndarray | None:
        return None if index is None else vectors[index]

    claims = [_claims(plan, vectors, policy, item.question, item.answer) for item, plan in zip(interactions, plans)]
    if policy.verifier is not None:
        claims = _verified(claims, plans, policy)
    results = []
    for item, plan, judged, window_matrix in zip(interactions, plans, claims, windows):
        passage_matrix = vectors[plan.passage_rows] if plan.passage_rows else np.zeros((0, vectors.shape[1]), dtype=np.float32)
        owners = [p.document for p in plan.passages]
        scores = compute_scores(row(plan.question), passage_matrix, row(plan.supporting), row(plan.answer), owners, window_matrix)  # type: ignore[arg-type]
        # Without retrieved documents there is nothing to ground on: SDRD/QRD/ARD cannot exist, so no verdict.
        reason = item.unscored_reason or (None if item.answer else "empty_answer") or (None if item.documents else "no_documents")
        results.append(
            assess(
                scores,
                policy.thresholds,
                item.answer,
                unscored_reason=reason,
                refusal=policy.refusal,
                supporting=item.supporting,
                documents=tuple(doc.text for doc in item.documents),
                claims=judged,
                claim_thresholds=policy.claims,
            )
        )
    return results


def _verified(claims: list[tuple[ClaimSupport, ...]], plans: list[_Plan], policy: ScoringPolicy) -> list[tuple[ClaimSupport, ...]]:
    """The claims the lexical rules decided (supported or not found), judged again by the user's verifier against the
    evidence they were aligned with (else their best passage): one verifier call for the whole batch."""
    assert policy.verifier is not None
    asked: list[tuple[int, int]] = []
    pairs: list[tuple[str, str]] = []
    for i, (judged, plan) in enumerate(zip(claims, plans)):
        for j, claim in enumerate(judged):
            evidence = _evidence_text(claim, plan)
            if claim.reason in _DECIDED_BY_RULES and evidence:
                asked.append((i, j))
                pairs.append((evidence, claim.text))
    if not pairs:
        return claims
    settings = policy.claims.verifier
    out = [list(judged) for judged in claims]
    for (i, j), verification in zip(asked, policy.verifier.verify(pairs)):
        out[i][j] = verified(out[i][j], verification.supported, verification.contradicted, settings.threshold)
    return [tuple(judged) for judged in out]


_DECIDED_BY_RULES = frozenset({"lexical", "similar", "lexical_and_similar", "no_evidence"})


def _evidence_text(claim: ClaimSupport, plan: _Plan) -> str:
    if claim.evidence_document is not None and claim.evidence_start is not None:
        return plan.documents[claim.evidence_document][claim.evidence_start : claim.evidence_end]
    if claim.document is not None and claim.passage_start is not None:
        return plan.documents[claim.document][claim.passage_start : claim.passage_end]
    return ""


def texts_to_embed(interactions: Sequence[Interaction], policy: ScoringPolicy) -> list[str]:
    """The distinct texts `assess_batch` would embed for these interactions (questions, passages, answers,
    supports and claims), in its order: what an embedder's fidelity must be judged on.  QRD's windows are left
    out: which passage they come from depends on these texts' vectors."""
    table = _TextTable()
    for item in interactions:
        _plan(item, table, policy)
    return list(table.rows)
