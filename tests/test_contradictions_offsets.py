"""Rates, offsets and conditions (issue 21, eighth round, the lead's third part).

**"a week" after an amount is a rate**: "£950 a week" meets "£950 per month" as two periods (the how-often terms),
"3 euros an hour" agrees with "3 euros per hour".

**A time offset told the other way**: "start them 2 days after you enter the area" where the evidence says "2 days
before entering", counted from the same thing ("10 minutes after baking" and "10 minutes before taking it out" count
from two things).

**A condition attached by "without" a few words after a negation**: "may not sublet the property or keep pets without
the landlord's written consent" says pets are allowed with consent; "only with the landlord's written consent" agrees,
"pets are allowed without the landlord's consent" does not.  And "without notice in an emergency" words the
evidence's "except in an emergency" as a negation, which agrees.
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

RENT = "Rent is £950 per month, payable in advance. Parking costs 3 euros per hour."
MALARIA = "Malaria tablets should be started 2 days before entering the area and taken for 7 days after leaving it."
LEASE = ("The tenant may not sublet the property or keep pets without the landlord's written consent. The landlord must "
         "give at least 24 hours' notice before visiting, except in an emergency.")


@pytest.mark.parametrize("document, answer", [
    (RENT, "Rent is £950 a week, payable in advance."),
    (MALARIA, "Start the tablets 2 days after you enter the area."),
    (LEASE, "Yes, you can keep pets without the landlord's consent."),
])
def test_an_unfaithful_claim_is_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer, question", [
    (RENT, "Rent is £950 a month, paid in advance, and parking is 3 euros an hour.", "How much is rent?"),
    (MALARIA, "Start them 2 days before you enter the area and keep taking them for 7 days after you leave.", "When do I take them?"),
    (LEASE, "Only with the landlord's written consent.", "Can I keep a cat?"),
    (LEASE, "Yes, with at least 24 hours' notice, or without notice in an emergency.", "Can the landlord visit?"),
])
def test_a_faithful_claim_stays_grounded(embedder, document: str, answer: str, question: str) -> None:
    result = score(embedder, document, answer, question)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
