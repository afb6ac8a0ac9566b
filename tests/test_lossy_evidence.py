"""Evidence that lost words in extraction cannot witness a missing negation (scoring/lossy.py).

A PDF or OCR extraction, or a decoder that drops tokens, leaves "attempt to refuel the engine while it is running."
where the manual said "Never attempt to ...": a faithful "never" in the answer then looks like a flipped negation.
Such documents carry marks edited prose does not (an article or a conjunction before a stop or a comma, two commas
with nothing between them, "the will be"), and on them a negation the claim has and the evidence lacks is no longer
a contradiction.  A negation the evidence has is still compared, and documents without the marks are judged as
before: the attacks of the other test files all run on edited prose.
"""

from __future__ import annotations

import pytest

from ragtap.scoring.lossy import lost_words
from ragtap.types import ClaimOutcome, Verdict

from test_contradictions import outcomes, score

# Extracted with words lost (the originals said "Never attempt to refuel ...", "If the alarm sounds, ...").
BOAT = ("refuelling the outboard engine. stop the engine and let it cool for the. attempt to refuel the engine while it "
        "is running. the alarm sounds, leave the engine room and close the,, hatch. never store the spare fuel can in "
        "the cabin; keep it in the stern locker. the will be a fire extinguisher by the. check its pressure gauge "
        "every month.")
HEATER = ("safety. the heater must stand on a flat surface at least 1 metre from curtains or. attempt to cover the "
          "heater while it is switched on. unplug it before cleaning and let it cool for 30 minutes. the tip-over "
          "switch turns the heater off if it falls. do not use an extension lead with the.")
# The same facts in edited prose: here a "never" the document lacks is an added negation.
BOAT_EDITED = ("Stop the engine and let it cool before refuelling. Owners may top up the engine while it is running "
               "only with the approved quick-fill nozzle. Never store the spare fuel can in the cabin; keep it in the "
               "stern locker.")


def test_the_marks_of_lost_words() -> None:
    assert lost_words(BOAT) and lost_words(HEATER)
    # Edited prose has none, even where a sentence ends on a preposition or a pronoun, or a time is written "a.m.".
    assert not lost_words(BOAT_EDITED)
    assert not lost_words("The ferry leaves at 7 a.m. and returns at 6 p.m. There is nothing like this. Read this: it "
                          "is the hardest injury to recover from, doctors say. Cars, vans and, in summer, bikes are carried.")
    # One slip in a long document is no loss.
    assert not lost_words("A guide to the museum. " * 12 + "Tickets are sold at the.")


@pytest.mark.parametrize("document, answer", [
    (BOAT, "Never attempt to refuel the engine while it is running; stop it and let it cool first."),
    (HEATER, "Never attempt to cover the heater while it is switched on."),
])
def test_a_faithful_negation_the_extraction_lost_is_not_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert not result.contradicted_claims, outcomes(result)


def test_the_same_negation_against_edited_prose_is_still_a_contradiction(embedder) -> None:
    result = score(embedder, BOAT_EDITED, "Never top up the engine while it is running, even with the quick-fill nozzle.")
    assert [c.outcome for c in result.claims] == [ClaimOutcome.CONTRADICTED], outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer", [
    (BOAT, "You can store the spare fuel can in the cabin."),
    (HEATER, "You can use an extension lead with the heater."),
])
def test_a_negation_that_survived_extraction_is_still_compared(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


# Lost words of another shape: a requirement whose state was dropped ("the guard must be [closed]."), beside one lost
# article mark -- too few of the marks above for a document this long, until "must be." counts.
SAW = ("operating the table saw. the saw must be unplugged before the blade is changed. the blade guard must be. the "
       "riving knife must be fitted for every cut. keep both hands clear of the blade. the push stick must be. feed the "
       "wood slowly and let the blade reach full speed first. stand to one side of the blade. check the fence is locked "
       "before each cut. attempt to reach over the blade while it is turning. clean the saw table after use with the.")
SAW_EDITED = ("Unplug the saw before the blade is changed. The blade guard must be closed, and the riving knife must be "
              "fitted for every cut. Keep both hands clear of the blade. Reaching over the blade is fine once it has "
              "stopped. Stand to one side of the blade. Check the fence is locked before each cut.")


def test_a_requirement_that_lost_its_state_is_a_mark() -> None:
    assert lost_words(SAW)
    # Edited prose says what must be so, or leaves it to an ellipsis after a negation ("should not be.").
    assert not lost_words(SAW_EDITED)
    assert not lost_words("Some hills are too steep to climb and should not be. You should always climb hills straight "
                          "up and down. A spotter can be helpful. Check the grade first. Turn back if in doubt.")


def test_a_faithful_never_against_a_saw_manual_that_lost_words(embedder) -> None:
    result = score(embedder, SAW, "Never attempt to reach over the blade while it is turning.")
    assert not result.contradicted_claims, outcomes(result)
    edited = score(embedder, SAW_EDITED, "Never reach over the blade, even once it has stopped.")
    assert edited.contradicted_claims, outcomes(edited)
