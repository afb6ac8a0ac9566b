"""Issue 21, ninth round: five readings of a negation or a span.  18 of these 25 cases are wrong on the code before
(5e5c1e8); the other seven (the hook, the power LED off, the amber light on, a late registration, "you can't fly a
drone", jet skis in October and in July) are neighbours that hold the new readings to what they must not change.

**A failure and what it leads to is a warning to do the thing**: "Failure to close the valve may result in a leak"
says what "close the valve to prevent a leak" says; the "failure" is no negation the faithful claim drops.

**"unless" is "if not", so a prohibition with "unless" allows what its condition names**: "Do not open the lid unless
the indicator has dropped" = open it only once it has (two negations, one assertion); a claim that it may be opened
anyway, or without the condition, is contradicted.

**A thing said to be on or off is the state "turn on" / "turn off" leads to**: "the amber light comes on" is
contradicted by "the light stays off"; "the keys are on the hook" is a place, not a state (the state reading needs
nothing after "on" that it could govern).

**A prohibition said with a word is what a denied possibility says**: "Drones are forbidden over the reserve" is what
"you can't fly a drone over the reserve" and "No, drones aren't allowed there" say ("can't" is "can not": it was read
"ca not"); "forbidden" is the opposite of "allowed" as "forbid" is, and a claim that you *can* do what the evidence
forbids in a word ("You can have a barbecue on the roof terrace" / "Barbecues are forbidden ..., including the roof
terrace") is contradicted, where neither side has a negation.

**A month or a day inside a span the evidence states is no other month or day**: "banned between June and August"
holds July; "Monday to Friday" holds Wednesday; October is still outside.
"""

from __future__ import annotations

import pytest

from ragtap.types import Assessment, Verdict

from test_contradictions import outcomes, score

VALVE = "Failure to close the gas valve fully may result in a leak."
HARNESS = "Failure to wear the harness can lead to serious injury."
REGISTER = "Failure to register within 30 days will result in a late fee."
COOKER = "Do not open the lid unless the pressure indicator has dropped."
HEATER = "Never leave the heater running unless someone is in the room."
REMOTE = "Staff may not work from home unless their manager has approved it in writing."
SYRUP = "Do not give this syrup to children unless a doctor has advised it."
FILTER = "When the filter needs cleaning, the amber light comes on."
ROUTER = "During a firmware update the power LED is off; do not unplug the router."
HALLWAY = "The spare keys are on the hook by the door."


def assert_judged(result: Assessment, faithful: bool) -> None:
    """A faithful answer stays grounded; an unfaithful one has a contradicted claim."""
    if faithful:
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    else:
        assert result.contradicted_claims, outcomes(result)


@pytest.mark.parametrize("document, answer", [
    (VALVE, "Make sure the gas valve is fully closed to prevent a leak."),
    (HARNESS, "Always wear the harness to avoid serious injury."),
    (REGISTER, "Register within 30 days to avoid a late fee."),
    (COOKER, "Make sure the pressure indicator has dropped before you open the lid."),
    (HEATER, "Only leave the heater running if someone is in the room."),
    (REMOTE, "Staff can work from home only with their manager's written approval."),
    (SYRUP, "Only give this syrup to children if a doctor has advised it."),
    (FILTER, "The amber light is on when the filter needs cleaning."),
    (ROUTER, "The power LED is off during a firmware update, and you should not unplug the router."),
    (HALLWAY, "The spare keys are on the hook by the door."),
])
def test_a_faithful_claim_stays_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


@pytest.mark.parametrize("document, answer", [
    (COOKER, "You can open the lid at any time, even if the pressure indicator has not dropped."),
    (HEATER, "You can leave the heater running when nobody is in the room."),
    (REMOTE, "Staff can work from home without their manager's approval."),
    (FILTER, "The amber light stays off when the filter needs cleaning."),
    (ROUTER, "The power LED is on during a firmware update."),
    (REGISTER, "Registering after 30 days carries no late fee."),
])
def test_an_unfaithful_claim_is_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


DRONES = "Drones are forbidden over the nature reserve at all times."
BARBECUES = "Barbecues are forbidden everywhere in the building, including the roof terrace."
MARINA = "Jet skis are banned in the marina between June and August."
FLY = "Can I fly a drone over the nature reserve?"
JET_SKI = "Can I use a jet ski in the marina in July?"


@pytest.mark.parametrize("document, answer, question", [
    (DRONES, "You can't fly a drone over the nature reserve.", "What are the rules for drones?"),
    (DRONES, "No, drones aren't allowed over the nature reserve at any time.", FLY),
    (MARINA, "No, jet skis are not allowed in the marina in July.", JET_SKI),
    (BARBECUES, "You can't have a barbecue on the roof terrace.", "What are the rules for barbecues?"),
    (BARBECUES, "You cannot have a barbecue on the roof terrace.", "What are the rules for barbecues?"),
])
def test_a_prohibition_restated_and_a_month_inside_its_span_stay_grounded(embedder, document: str, answer: str, question: str) -> None:
    result = score(embedder, document, answer, question)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


@pytest.mark.parametrize("document, answer, question", [
    (DRONES, "Yes, drones are allowed over the nature reserve.", FLY),
    (MARINA, "Jet skis are banned in the marina in October.", "When are jet skis banned?"),
    (MARINA, "Yes, jet skis are allowed in the marina in July.", JET_SKI),
    (BARBECUES, "You can have a barbecue on the roof terrace.", "What are the rules for barbecues?"),
])
def test_a_permission_against_a_worded_prohibition_or_a_month_outside_its_span_is_contradicted(
        embedder, document: str, answer: str, question: str) -> None:
    result = score(embedder, document, answer, question)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


# An amount written with its currency's code is money of that currency ("CHF 480" was a label, and "540 altogether"
# counted "altogether"s), so a total the claim works out of amounts in its own currency is derived.
COURSE = "The evening German course costs CHF 480, plus a one-off registration fee of CHF 60. Books are extra."


def test_amounts_with_a_currency_code_add_up(embedder) -> None:
    faithful = score(embedder, COURSE, "You'd pay CHF 480 for the course and CHF 60 to register, so CHF 540 altogether.")
    assert faithful.verdict is Verdict.GROUNDED, (faithful.explanation, outcomes(faithful))
    wrong = score(embedder, COURSE, "You'd pay CHF 480 for the course and CHF 60 to register, so CHF 560 altogether.")
    assert wrong.verdict is not Verdict.GROUNDED, outcomes(wrong)
    changed = score(embedder, COURSE, "The registration fee is CHF 80.")
    assert changed.contradicted_claims, outcomes(changed)


# Dimensions share the unit written after the last of them ("120 × 240 cm"), so a conversion of all of them agrees
# and a changed one is still missing.
BEDS = "Each raised bed measures 120 × 240 cm and holds about 600 litres of soil."


def test_dimensions_take_the_unit_after_the_last_one(embedder) -> None:
    converted = score(embedder, BEDS, "The beds are 1.2 by 2.4 metres.")
    assert converted.verdict is Verdict.GROUNDED, (converted.explanation, outcomes(converted))
    changed = score(embedder, BEDS, "The beds are 1.2 by 3 metres.")
    assert changed.verdict is not Verdict.GROUNDED, outcomes(changed)


# A year the evidence names by its neighbour ("relit the following year" after 1903) is the year after, no other.
LIGHTHOUSE = "The lighthouse was damaged by a storm in 1903 and relit the following year."


def test_the_following_year_is_worked_out(embedder) -> None:
    assert_judged(score(embedder, LIGHTHOUSE, "The lighthouse was relit in 1904."), faithful=True)
    assert_judged(score(embedder, LIGHTHOUSE, "The lighthouse was relit in 1905."), faithful=False)


# The passive on one side puts agent and patient in the other order without trading their roles; both sides active
# (or both passive) in the other order is still a swap.
SUPPLIER = "The supplier was sued by the council in 2019 over late deliveries."


@pytest.mark.parametrize("document, answer, faithful", [
    (SUPPLIER, "In 2019 the council sued the supplier over late deliveries.", True),
    (LIGHTHOUSE, "After storm damage in 1903, the lighthouse was relit in 1904.", True),
    ("The council sued the supplier in 2019 over late deliveries.", "The supplier was sued by the council in 2019.", True),
    ("The council sued the supplier in 2019 over late deliveries.", "In 2019 the supplier sued the council over late deliveries.", False),
])
def test_the_passive_is_no_swap(embedder, document: str, answer: str, faithful: bool) -> None:
    assert_judged(score(embedder, document, answer), faithful)


# "Open on Sundays, but not on bank holidays": the second clause denies the first clause's predicate for another place
# or time, so a faithful "stays closed on bank holidays" agrees with it and "open on bank holidays" does not.
SHOP = "The shop is open on Sundays, but not on bank holidays."


def test_a_denied_place_or_time_takes_the_predicate_before_it(embedder) -> None:
    assert_judged(score(embedder, SHOP, "The shop opens on Sundays but stays closed on bank holidays."), faithful=True)
    assert_judged(score(embedder, SHOP, "The shop is open on bank holidays."), faithful=False)


# An inclusion written after what it includes ("all visitors, coach parties included") is compared with the exception
# as "including coach parties" is.
GARDENS = "Entry to the gardens is free for all visitors, except coach parties, who pay £3 a head."
PARKING = "Parking is free for all hotel guests, including motorcyclists."


@pytest.mark.parametrize("document, answer, faithful", [
    (GARDENS, "Entry is free for all visitors, coach parties included.", False),
    (GARDENS, "Entry is free for all visitors, though coach parties pay £3 a head.", True),
    (PARKING, "Parking is free for all hotel guests, motorcyclists too.", True),
    (PARKING, "All hotel guests park free, motorcyclists included.", True),
])
def test_an_inclusion_written_after_its_item(embedder, document: str, answer: str, faithful: bool) -> None:
    assert_judged(score(embedder, document, answer), faithful)


# "At any time" waives a time the evidence sets ("after the minimum term", "once they have consent"); checked whatever
# the window's coverage, since "at any time" is itself words the evidence lacks.
CONTRACT = "After the minimum term of 12 months, the contract can be cancelled with 30 days' written notice."
TENANCY = "Tenants may redecorate once they have the landlord's written consent."
ACCOUNT = "Subscribers can cancel at any time from their account page; refunds are issued after 5 working days."


@pytest.mark.parametrize("document, answer, faithful", [
    (CONTRACT, "You can cancel at any time by giving 30 days' written notice.", False),
    (TENANCY, "Tenants may redecorate at any time.", False),
    (CONTRACT, "Once the 12-month minimum term is over, you can cancel with 30 days' written notice.", True),
    (TENANCY, "Tenants can redecorate once the landlord agrees in writing.", True),
    (ACCOUNT, "You can cancel at any time from your account page.", True),
])
def test_at_any_time_against_a_time_the_evidence_sets(embedder, document: str, answer: str, faithful: bool) -> None:
    assert_judged(score(embedder, document, answer), faithful)
