"""All where the evidence says only, only where it says every, a second member for "the only one"
(scoring/quantifiers.py; each wrong case grounded on the code before)."""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

PLANS = ("Pro costs 25 dollars a month and is the only plan with version history. All plans include two-factor "
         "authentication, but only Plus and Pro allow file sharing with external users. Annual billing saves 20% on every plan.")
CLUB = ("All members can book courts online, but only Gold members can book more than 7 days ahead. Juniors are the only "
        "members with free coaching. A 10% discount applies to every class.")


@pytest.mark.parametrize("document, answer", [
    (PLANS, "Yes, all plans allow file sharing with external users."),
    (PLANS, "Annual billing saves 20%, but only on the Pro plan."),
    (PLANS, "The Plus and Pro plans have version history."),
    (CLUB, "All members can book more than 7 days ahead."),
])
def test_a_quantifier_turned_around_is_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer", [
    (PLANS, "Every plan has two-factor authentication, but external sharing is only on Plus and Pro."),
    (PLANS, "Only the Pro plan keeps version history."),
    (PLANS, "Paying annually saves 20% on every plan."),
    (CLUB, "Any member can book a court online; only Gold members can book more than a week ahead."),
])
def test_faithful_quantifiers_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
