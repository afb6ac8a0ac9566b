"""Issue 21, ninth round: three readings of a negation.  12 of these 16 cases are wrong on the code before (5e5c1e8);
the other four (the hook, the power LED off, the amber light on, a late registration) are neighbours that hold the
new readings to what they must not change.

**A failure and what it leads to is a warning to do the thing**: "Failure to close the valve may result in a leak"
says what "close the valve to prevent a leak" says; the "failure" is no negation the faithful claim drops.

**"unless" is "if not", so a prohibition with "unless" allows what its condition names**: "Do not open the lid unless
the indicator has dropped" = open it only once it has (two negations, one assertion); a claim that it may be opened
anyway, or without the condition, is contradicted.

**A thing said to be on or off is the state "turn on" / "turn off" leads to**: "the amber light comes on" is
contradicted by "the light stays off"; "the keys are on the hook" is a place, not a state (the state reading needs
nothing after "on" that it could govern).
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

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
