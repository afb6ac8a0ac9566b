"""The scoring core without the proxy: the thesis's five cases with the default thresholds, the verdict rules one
by one on hand-made scores, the refusal detector, and the metric arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import RecordingEmbedder

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.demo.cases import thesis_cases
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.scoring.metrics import compute_scores
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR, RefusalDetector
from ragtap.scoring.verdict import assess
from ragtap.types import Document, Interaction, Scores, Thresholds, Verdict

THESIS_VERDICTS = {
    "thesis-1": (Verdict.GROUNDED, False),
    "thesis-2": (Verdict.UNSUPPORTED_ANSWER, True),
    "thesis-3": (Verdict.PARAMETRIC, True),
    "thesis-4": (Verdict.REFUSAL, True),
    "thesis-5": (Verdict.REFUSAL, True),
}


def thesis_interactions() -> list[Interaction]:
    return [
        Interaction(question=c.question, documents=tuple(Document(t) for t in c.retrieved), answer=c.answer, supporting=c.supporting, id=c.id)
        for c in thesis_cases()
    ]


# --------------------------------------------------------------------------------------------------------------
# the thesis's Figure 3.2 with the real embedder and the default thresholds
# --------------------------------------------------------------------------------------------------------------


def test_thesis_cases_give_the_required_verdicts(embedder) -> None:
    interactions = thesis_interactions()
    assessments = assess_batch(interactions, embedder, ScoringPolicy(DEFAULT_THRESHOLDS))
    assert len(assessments) == 5
    for interaction, assessment in zip(interactions, assessments):
        assert (assessment.verdict, assessment.poor_retrieval) == THESIS_VERDICTS[interaction.id], (interaction.id, assessment.explanation)
        assert all(v is not None and -1.0 <= v <= 1.0001 for v in assessment.scores.as_dict().values())
        assert assessment.scores.attributed_document == 0
        assert set(assessment.passed) == {"sdq", "sdrd", "sda", "qrd", "qa", "ard"}


def test_thesis_readings_hold_in_the_scores(embedder) -> None:
    """Beyond the verdict labels, the scores show what the thesis read into each case."""
    by_id = {i.id: a for i, a in zip(thesis_interactions(), assess_batch(thesis_interactions(), embedder, ScoringPolicy(DEFAULT_THRESHOLDS)))}
    t = DEFAULT_THRESHOLDS
    one, two, three = by_id["thesis-1"].scores, by_id["thesis-2"].scores, by_id["thesis-3"].scores
    assert min(one.sdq, one.sdrd, one.sda) >= max(t.sdq, t.sda)  # grounded: everything high  # type: ignore[type-var]
    assert two.sdrd >= t.sdrd and two.sda < t.sda  # support copied from the docs, answer does not follow it  # type: ignore[operator]
    assert three.sdrd < t.sdrd and three.qa >= t.qa  # own support, on-topic answer  # type: ignore[operator]
    assert by_id["thesis-5"].refusal_phrase is not None  # the refusal is in the wording: QA alone misses it


def test_batch_embeds_each_distinct_text_once(embedder) -> None:
    spy = RecordingEmbedder(embedder)
    items = thesis_interactions()
    doubled = items + [Interaction(i.question, i.documents, i.answer, i.supporting) for i in items]
    assessments = assess_batch(doubled, spy, ScoringPolicy(DEFAULT_THRESHOLDS))
    calls = spy.calls
    # one call for the texts, one for QRD's windows of the passages closest to the questions (pipeline/batch.py)
    assert len(calls) == 2 and all(len(call) == len(set(call)) for call in calls) and not set(calls[0]) & set(calls[1])
    assert [a.verdict for a in assessments[:5]] == [a.verdict for a in assessments[5:]]


def test_batch_without_support_empty_answer_and_no_documents(embedder) -> None:
    case = thesis_cases()[0]
    items = [
        Interaction(case.question, (Document(case.retrieved[0]),), case.answer),  # no supporting content
        Interaction(case.question, (Document(case.retrieved[0]),), "", case.supporting),  # empty answer
        Interaction(case.question, (), case.answer, case.supporting),  # no documents
        Interaction(case.question, (Document(case.retrieved[0]),), case.answer, None, unscored_reason="not_json"),
    ]
    no_support, empty, no_docs, unsplit = assess_batch(items, embedder, ScoringPolicy(DEFAULT_THRESHOLDS))
    assert no_support.scores.sdq is None and no_support.scores.sdrd is None and no_support.scores.sda is None
    assert None not in (no_support.scores.qrd, no_support.scores.qa, no_support.scores.ard)
    assert no_support.verdict is Verdict.GROUNDED
    assert empty.verdict is Verdict.UNSCORED and "empty_answer" in empty.explanation
    assert no_docs.poor_retrieval is None and no_docs.scores.sdrd is None and no_docs.scores.attributed_document is None
    assert no_docs.verdict is Verdict.UNSCORED and "no_documents" in no_docs.explanation
    assert no_docs.scores.sdq is not None and no_docs.scores.qa is not None
    assert unsplit.verdict is Verdict.UNSCORED and unsplit.scores.qa is not None


def test_batch_of_nothing(embedder) -> None:
    assert assess_batch([], embedder, ScoringPolicy(DEFAULT_THRESHOLDS)) == []


# --------------------------------------------------------------------------------------------------------------
# verdict rules on hand-made scores
# --------------------------------------------------------------------------------------------------------------

T = Thresholds(sdq=0.5, sdrd=0.6, sda=0.5, qrd=0.45, qa=0.4, ard=0.55)
HIGH = dict(sdq=0.9, sdrd=0.9, sda=0.9, qrd=0.9, qa=0.9, ard=0.9)


def verdict_of(answer: str = "The APIs stay the same.", **scores: float | None) -> tuple[Verdict, bool | None]:
    result = assess(Scores(**{**HIGH, **scores}), T, answer)
    return result.verdict, result.poor_retrieval


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({}, Verdict.GROUNDED),
        ({"sdq": 0.5, "sdrd": 0.6, "sda": 0.5}, Verdict.GROUNDED),  # exactly at the threshold passes
        ({"sdrd": 0.3}, Verdict.PARAMETRIC),  # support not from the docs, answer on the question
        ({"sda": 0.2}, Verdict.UNSUPPORTED_ANSWER),  # support from the docs, answer does not follow it
        ({"sdq": 0.2}, Verdict.UNSUPPORTED_ANSWER),  # support from the docs but off the question
        ({"sdrd": 0.3, "sda": 0.2}, Verdict.PARAMETRIC),
        ({"sda": 0.2, "qa": 0.1}, Verdict.REFUSAL),  # QA fails together with a primary metric
        ({"sdrd": 0.2, "qa": 0.1}, Verdict.REFUSAL),
        ({"qa": 0.1}, Verdict.GROUNDED),  # QA alone (short answers score low) does not make a refusal
    ],
)
def test_verdict_rules(scores: dict[str, float], expected: Verdict) -> None:
    assert verdict_of(**scores)[0] is expected


def test_refusal_wording_wins_over_good_scores() -> None:
    result = assess(Scores(**HIGH), T, "The provided context does not mention the regions.")
    assert result.verdict is Verdict.REFUSAL and result.refusal_phrase


def test_poor_retrieval_is_independent_of_the_verdict() -> None:
    assert verdict_of(qrd=0.2) == (Verdict.GROUNDED, True)
    assert verdict_of(qrd=0.45) == (Verdict.GROUNDED, False)
    assert verdict_of(sdrd=0.1, qrd=0.2) == (Verdict.PARAMETRIC, True)
    assert verdict_of(qrd=None)[1] is None  # no documents: nothing to judge


def test_without_supporting_content_the_answer_is_judged_against_the_documents() -> None:
    base = dict(sdq=None, sdrd=None, sda=None)
    assert verdict_of(**base)[0] is Verdict.GROUNDED
    assert verdict_of(**base, ard=0.3)[0] is Verdict.PARAMETRIC
    assert verdict_of("I don't know.", **base)[0] is Verdict.REFUSAL


def test_unscored_keeps_the_scores() -> None:
    result = assess(Scores(**HIGH), T, "x", unscored_reason="truncated")
    assert result.verdict is Verdict.UNSCORED and "truncated" in result.explanation and result.scores.qa == 0.9
    assert assess(Scores(**HIGH), T, None).verdict is Verdict.UNSCORED
    assert assess(Scores(**{**HIGH, "qa": None}), T, "x").verdict is Verdict.UNSCORED


def test_explanations_name_the_failing_metric() -> None:
    result = assess(Scores(**{**HIGH, "sdrd": 0.3}), T, "answer")
    assert "SDRD 0.30 fail" in result.explanation and "SDQ 0.90 pass" in result.explanation
    assert result.passed == {"sdq": True, "sdrd": False, "sda": True, "qrd": True, "qa": True, "ard": True}


# --------------------------------------------------------------------------------------------------------------
# refusal wording
# --------------------------------------------------------------------------------------------------------------

REFUSALS = [
    "No information available in the retrieved document.",
    "No, the retrieved document does not provide info about NLB supporting layer 7 switching.",
    "The provided context does not contain any information about bare metal servers.",
    "The documents don't mention webhooks.",
    "I don't know.",
    "I do not have enough information to answer that.",
    "I'm not sure, the context is silent on this.",
    "I cannot answer this question based on the given documents.",
    "This is not specified in the provided documents.",
    "There is no relevant information about IBM regions in the context.",
    "Unable to determine the answer from the sources.",
]
ANSWERS = [
    "No, the nitro hypervisor does not change the APIs.",
    "No, the nitro hypervisor will not change the APIs used to interact with EC2 instances.",
    "No, you cannot install your own Hadoop stack components in IBM service.",
    "You can create a webhook by specifying the protocol and the endpoint URL.",
    "The document states that limits are available in all commercial regions.",
    "Yes.",
    "The API does not support layer 7 switching; use an ALB instead.",
    "It isn't possible to resize the volume while it is attached.",
    "The information you need is in the billing console.",
    "The service does not support IPv6 yet.",
    "Context switching does not provide a speedup here.",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_found(text: str) -> None:
    assert DEFAULT_REFUSAL_DETECTOR.find(text) is not None


@pytest.mark.parametrize("text", ANSWERS)
def test_answers_with_negations_are_not_refusals(text: str) -> None:
    assert DEFAULT_REFUSAL_DETECTOR.find(text) is None


def test_extra_refusal_patterns_from_config() -> None:
    detector = RefusalDetector.build([r"\bsorry, out of scope\b"])
    assert detector.find("Sorry, out of scope for this assistant.") is not None
    assert detector.find("The nitro hypervisor keeps the APIs.") is None


# --------------------------------------------------------------------------------------------------------------
# the metric arithmetic
# --------------------------------------------------------------------------------------------------------------


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_compute_scores_takes_the_best_document_and_attributes_it() -> None:
    q, sd, a = unit(1, 0, 0), unit(0, 1, 0), unit(0, 1, 1)
    docs = np.stack([unit(1, 1, 0), unit(0, 1, 0), unit(0, 0, 1)])
    scores = compute_scores(q, docs, sd, a)
    assert scores.sdrd == pytest.approx(1.0) and scores.attributed_document == 1
    assert scores.sdq == pytest.approx(0.0, abs=1e-6)
    assert scores.sda == pytest.approx(np.sqrt(0.5))
    assert scores.qrd == pytest.approx(np.sqrt(0.5))
    assert scores.qa == pytest.approx(0.0, abs=1e-6)
    assert scores.ard == pytest.approx(np.sqrt(0.5))


def test_compute_scores_without_support_or_documents() -> None:
    q, a = unit(1, 0), unit(1, 1)
    docs = np.stack([unit(0, 1), unit(1, 0.1)])
    scores = compute_scores(q, docs, None, a)
    assert scores.sdq is None and scores.sdrd is None and scores.sda is None
    assert scores.attributed_document is not None  # falls back to the answer's best document
    empty = compute_scores(q, np.zeros((0, 2), dtype=np.float32), None, a)
    assert empty.qrd is None and empty.ard is None and empty.attributed_document is None and empty.qa is not None
