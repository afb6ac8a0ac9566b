"""Issue 21, eighth round: classes of our own, each unfaithful case grounded on the code before.

**A count of part of a whole counts what the whole counts**: "won 14 of the 40 seats" are seats, so "11 of the 40
seats" (Labour's 11, in the same sentence) disagrees with it; two bare counts said nothing about each other.

**An elliptical negation takes its predicate from the clause before**: "Helmets are provided for every rider, but
gloves are not." says gloves are not provided; "Residents may park in bays A to F; visitors may not.".

**"first" and "last" are opposites** (a "whichever comes first" turned "last"), but "last month" is a time and "the
warranty lasts 3 years" a verb.

**Erased / kept** are opposites (delete, wipe, lose / keep, retain, preserve), and **a win told with another verb**
("Carrow Town won 3-1 against Dunmore" / "Dunmore beat Carrow Town 3-1") is the two teams trading places; a claim
sentence may end where the evidence's goes on ("... on Saturday").

**A thing given to another owner** (scoring/possessors.py): "Dunmore's goalkeeper Tom Reid" where the evidence says
"Carrow's goalkeeper Tom Reid" (the same noun followed by the same word; "Carrow's desire to keep Byrne" is not
"Liam's desire to move abroad").

**Times and shares said in words** ("until midnight" against 23:00; "two in five" = 40%), **fixed / variable** and
**working / calendar days** are opposites, and **an affirmation that leaves out its predicate** takes it from the
clause before without the negation it answers ("Glass bottles are not allowed on site, but sealed plastic bottles
are" = allowed on site; a claim's "plastic isn't allowed" against it is still taken for the glass clause's negation,
which the window also holds: not caught).

**A bare number after a name or a label noun is that thing's number** ("Android 9" / "Android 10", "Route 42"); "half
hour" and "half-day" are spans; an age group ("Over-60s") is no code name; and what the evidence says *was removed*
("Exports to PDF were removed in this version") is contradicted by a claim that it can be done or is available.

**Times of day take "from" and "by" as their roles** too, and the numbers' own checks (`anchors.py`, a change told the
other way) run whatever the window's coverage ("Check in from 11:00; check out by 14:00": "check" alone aligns);
"welcome" and "permitted" are "allowed".

**"gloves are not provided" is no refusal**: the passive hedge "is not provided" marked it as one; a hedge needs "has
not been provided" (or "is not specified / mentioned / stated / disclosed").

**A change told with a word for the other way**: "unemployment fell to 4.2% from 3.9%" where the evidence says it
stood at 4.2%, up from 3.9% -- both values stated, only the word turned; checked even where the claim's words barely
align ("unemployment" alone), since its two values tie it to the sentence.
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

SURVEY = "The survey found that 62 of the 80 respondents use the app daily, while 18 use it weekly."
RIDES = "Helmets are provided for every rider, but gloves are not. Residents may park in bays A to F; visitors may not."
FORMS = "Submit the timesheet on the first working day of the month. Sales rose last month, the first increase this year."
LABOUR = "Unemployment stood at 4.2% in March, up from 3.9% a year earlier. Wages grew by 3%."
FILTER = "Replace the cartridge every 4 weeks or after 150 litres, whichever comes first."
ROUTER = "After a reset, port forwarding rules and parental controls are erased, but the firmware version is kept."
FESTIVAL = ("Gates open at 11:00 and the last set finishes at 23:00. Glass bottles are not allowed on site, but sealed plastic "
            "bottles are. About 40% of tickets go to visitors from outside the county.")
LOAN = "The loan has a fixed rate of 4.9% APR, and decisions are made within 5 working days."
MATCH = ("Dunmore Athletic beat Carrow Town 3-1 on Saturday, with two goals from Liam Byrne. Carrow's goalkeeper Tom Reid "
         "was sent off in the 81st minute. Despite wishing to keep Byrne, Carrow appreciated Liam's desire to move abroad.")


@pytest.mark.parametrize("document, answer", [
    (SURVEY, "18 of the 80 respondents use the app daily."),
    (RIDES, "Helmets and gloves are provided for every rider."),
    (RIDES, "Visitors may park in bays A to F."),
    (FORMS, "Submit the timesheet on the last working day of the month."),
    (FILTER, "Replace it every 4 weeks or after 150 litres, whichever comes last."),
    (LABOUR, "Unemployment fell to 4.2% from 3.9% a year earlier."),
    (ROUTER, "Port forwarding rules are kept after a reset, but parental controls are erased."),
    (MATCH, "Carrow Town won 3-1 against Dunmore Athletic."),
    (MATCH, "Dunmore's goalkeeper Tom Reid was sent off in the 81st minute."),
    (LOAN, "The loan has a variable rate of 4.9% APR."),
    (LOAN, "Decisions are made within 5 calendar days."),
])
def test_an_unfaithful_claim_is_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer", [
    (SURVEY, "62 of the 80 respondents use the app every day, and 18 use it weekly."),
    (RIDES, "Every rider gets a helmet, but gloves are not provided."),
    (FORMS, "Sales went up last month, the first increase this year."),
    (FILTER, "Replace the cartridge every 4 weeks or after 150 litres, whichever comes first."),
    (LABOUR, "Unemployment rose to 4.2% from 3.9% a year earlier."),
    (ROUTER, "A reset erases port forwarding rules and parental controls but keeps the firmware version."),
    (MATCH, "Dunmore Athletic won 3-1 against Carrow Town."),
    (MATCH, "Tom Reid, Carrow's goalkeeper, was sent off in the 81st minute."),
    (FESTIVAL, "Gates open at 11am and the last set ends at 11pm. Sealed plastic bottles are allowed, but glass isn't."),
    (FESTIVAL, "Sealed plastic bottles are allowed, glass isn't."),
    (FESTIVAL, "Around two in five tickets go to people from outside the county."),
    (LOAN, "It's a fixed 4.9% APR, with a decision within five working days."),
    (MATCH, "Despite Carrow's desire to keep Byrne, they appreciated his wish to move abroad."),
])
def test_a_faithful_claim_stays_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


def test_a_time_said_in_words_is_compared(embedder) -> None:
    result = score(embedder, FESTIVAL, "Gates open at 11am and the last set finishes at midnight.")
    assert result.verdict is not Verdict.GROUNDED, outcomes(result)  # midnight is no 23:00 (flagged as not stated)


APP = ("Version 3.2 of the app adds dark mode. The app requires Android 10 or later. Exports to PDF were removed in this "
       "version and will return in 3.3.")
BUS = ("Route 42 runs every 12 minutes on weekdays and every 30 minutes in the evenings. Passengers over 60 travel free "
       "after 9:30 with a concession pass.")


@pytest.mark.parametrize("document, answer, question", [
    (APP, "Yes, it supports Android 9 and later.", "Will it run on Android 9?"),  # a label's number: Android 9, not 10
    (APP, "Yes, you can export to PDF in version 3.2.", "Can I export to PDF?"),  # "were removed": not there
])
def test_a_labelled_number_and_a_removed_feature(embedder, document: str, answer: str, question: str) -> None:
    result = score(embedder, document, answer, question)
    assert result.contradicted_claims, outcomes(result)


@pytest.mark.parametrize("document, answer", [
    (APP, "Version 3.2 adds dark mode and needs Android 10 or later; PDF export comes back in 3.3."),
    (BUS, "Route 42 runs every 12 minutes on weekdays and every half hour in the evenings."),
    (BUS, "Over-60s with a concession pass travel free after 9:30."),  # "Over-60s" is no code name
])
def test_labels_half_hours_and_age_groups_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


CAMP = ("Check-in is from 14:00 and check-out by 11:00. Dogs are welcome at the campsite but must be kept on a lead. "
        "Quiet hours run from 22:00 to 7:00.")


@pytest.mark.parametrize("answer", [
    "Check in from 11:00; check out by 14:00.",  # two times trading places; "check" alone barely aligns
    "Dogs are not allowed at the campsite.",  # "welcome" and "allowed" are one permission
])
def test_times_trading_places_and_a_permission_in_other_words(embedder, answer: str) -> None:
    result = score(embedder, CAMP, answer)
    assert result.contradicted_claims, outcomes(result)


@pytest.mark.parametrize("answer", [
    "Check in from 14:00 and check out by 11:00.",
    "Dogs are allowed at the campsite, on a lead.",
])
def test_times_in_place_and_a_permission_stay_grounded(embedder, answer: str) -> None:
    result = score(embedder, CAMP, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
