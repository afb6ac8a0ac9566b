"""A short reply to a yes/no question is judged with its question (scoring/replies.py).

"No, they don't." has no content word to judge alone: before, such replies fell to the whole-answer similarity
rule, which three words never pass, so every faithful one was flagged `parametric` and every flipped one too, for
the same wrong reason.  Read with its question, the reply states the question's proposition, affirmed or denied.

A longer answer that opens with a plain Yes or No says the same of the question, whatever words follow: its first
claim is contradicted when the question's proposition, so answered, turns its evidence around ("Yes, it can be
combined with ibuprofen." / "should not be taken with ... ibuprofen"); a qualified reply ("Yes, on bank holiday
Mondays only") is judged by its own words.
"""

from __future__ import annotations

import pytest

from ragtap.scoring.replies import statement
from ragtap.types import ClaimOutcome, Verdict

from test_contradictions import outcomes, score

PARKING = ("Residents of Zone C can apply for a parking permit online. Motorcycles do not need a permit. Permits must "
           "be displayed on the windscreen at all times.")
SUMMIT = ("Workshops on 12 May are included in every ticket, but the gala dinner on 13 May costs 60 euros extra. Lunch "
          "is provided on both days.")
SITTERS = ("Sitters can give oral medication but cannot give injections. Dogs are walked on a leash only; sitters never "
           "take dogs to off-leash parks.")


def test_the_statement_a_reply_makes_with_its_question() -> None:
    assert statement("Do motorcycles need a permit?", "No, they don't.") == "not Do motorcycles need a permit"
    assert statement("Is lunch provided?", "Yes, on both days.") == "Is lunch provided on both days"
    # not a plain yes/no exchange: a wh-question, a negated or an alternative question, a reply without Yes/No
    assert statement("When is lunch?", "Yes.") is None
    assert statement("Isn't parking free on Sundays?", "No.") is None
    assert statement("Is it a permit or a voucher?", "Yes.") is None
    assert statement("Is lunch provided?", "On both days.") is None
    assert statement("Is lunch provided?", "Yes, but they don't serve dinner.") is None


@pytest.mark.parametrize("document, question, reply", [
    (PARKING, "Do motorcycles need a permit?", "No, they don't."),
    (PARKING, "Do motorcycles need a permit?", "No."),
    (PARKING, "Do I have to display the permit?", "Yes, at all times."),
    (SUMMIT, "Is lunch provided?", "Yes, on both days."),
    (SITTERS, "Do sitters take dogs to off-leash parks?", "No, never."),
])
def test_a_faithful_reply_is_grounded(embedder, document: str, question: str, reply: str) -> None:
    result = score(embedder, document, reply, question)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    assert [c.outcome for c in result.claims] == [ClaimOutcome.SUPPORTED]


@pytest.mark.parametrize("document, question, reply", [
    (PARKING, "Do motorcycles need a permit?", "Yes, they do."),
    (PARKING, "Do I have to display the permit?", "No."),
    (SUMMIT, "Is lunch provided?", "No."),
    (SITTERS, "Can sitters give injections?", "Yes."),
    (SITTERS, "Do sitters take dogs to off-leash parks?", "Yes, sometimes."),
])
def test_a_flipped_reply_is_contradicted(embedder, document: str, question: str, reply: str) -> None:
    result = score(embedder, document, reply, question)
    assert [c.outcome for c in result.claims] == [ClaimOutcome.CONTRADICTED], outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, question, reply", [
    (PARKING, "Do permits cover bicycles?", "Yes."),  # the documents never say
    (SUMMIT, "Is the gala dinner included?", "Yes, it is."),  # "included" is said of the workshops, in another clause
])
def test_a_reply_the_documents_do_not_answer_is_not_supported(embedder, document: str, question: str, reply: str) -> None:
    result = score(embedder, document, reply, question)
    assert result.verdict is not Verdict.GROUNDED, outcomes(result)


LEAFLET = ("Lumex can cause drowsiness, so do not drive after taking it. It should not be taken with alcohol or with other "
           "medicines containing ibuprofen. The museum is closed on Mondays except bank holidays.")


@pytest.mark.parametrize("question, answer", [
    ("Can I take it with ibuprofen?", "Yes, it can be combined with ibuprofen."),  # "combined" barely aligns alone
    ("Does it make you drowsy?", "No, Lumex does not cause drowsiness."),  # ", so do not drive" is a clause of its own
])
def test_a_plain_yes_or_no_that_turns_the_evidence_around_is_contradicted(embedder, question: str, answer: str) -> None:
    result = score(embedder, LEAFLET, answer, question)
    assert result.contradicted_claims, outcomes(result)


@pytest.mark.parametrize("question, answer", [
    ("Is the museum open on Mondays?", "Yes, on bank holiday Mondays only."),  # a qualified yes is its own claim
    ("Can I take it with alcohol?", "No, it should not be taken with alcohol."),
])
def test_a_qualified_or_faithful_reply_is_not_contradicted(embedder, question: str, answer: str) -> None:
    result = score(embedder, LEAFLET, answer, question)
    assert not result.contradicted_claims, outcomes(result)
