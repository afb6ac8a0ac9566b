"""Numbers compared with the right part of their evidence.

**A number of one kind is not stated by the same value of another kind.**

"Visitor vouchers come in books of 10 for £10" against "sold in books of 10 for £8": the bare 10 (a count of
vouchers) stated the claim's £10, so the changed price passed (both cases below were grounded before).  Where the evidence's part states the claim's
kind of quantity with a unit (a price, a weight, a duration), its bare numbers count something else; where it has
none of that kind, a bare number still states it ("costs 10 per day" / "£10 a day").

**A period a part leaves implicit.**  "A first permit costs £45 a year and a second permit costs £120": "A second
permit is £120 a year" was contradicted (its "year" tied it to the first part, and "second" became a number of that
part).  A part naming no period holds the claim's implicitly; a part naming another period does not ("£25 per day"
against "£5 per day ... £25 per week" is still the day pass's price changed).
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

VOUCHERS = "Visitor vouchers are sold in books of 10 for £8. Residents may buy up to 5 books a year."
EGGS = "Eggs are sold in a pack of 6 for £2.40, or a tray of 30 for £9."
BAGGAGE = "Each passenger may check 2 bags of up to 23 kg. A third bag costs 70 euros."
COURSE = "The course has 6 modules over 12 weeks, and each module ends with a quiz of 20 minutes."
PARKING = "Parking at the north gate costs 10 per day; the south gate is free."


@pytest.mark.parametrize("document, answer", [
    (VOUCHERS, "Visitor vouchers come in books of 10 for £10."),
    (EGGS, "A tray of 30 eggs costs £30."),
])
def test_a_changed_quantity_is_not_stated_by_a_bare_number_of_the_same_value(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer", [
    (VOUCHERS, "A book of 10 visitor vouchers costs £8."),
    (BAGGAGE, "You can check two bags, each up to 23 kg."),
    (EGGS, "A tray of 30 eggs is £9, and a pack of 6 is £2.40."),
    (COURSE, "It runs for 12 weeks and has 6 modules."),
    (PARKING, "Parking at the north gate costs £10 a day."),
])
def test_faithful_quantities_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


PERMITS = "A first permit costs £45 a year and a second permit costs £120. Day passes cost £5 per day, and weekly passes cost £25 per week."


def test_a_period_a_part_leaves_implicit(embedder) -> None:
    result = score(embedder, PERMITS, "A second permit is £120 a year.", "How much is a second permit?")
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    for changed in ("The first permit costs £120 a year.", "A day pass costs £25 per day."):
        result = score(embedder, PERMITS, changed)
        assert result.contradicted_claims, outcomes(result)
