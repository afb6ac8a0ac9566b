"""Numbers in the wrong place or rounded too far (issue 21, eighth round, the lead's second part).

**A number put in another number's place within one sentence** (scoring/anchors.py): "no band below 6.5" where the
evidence says "an IELTS score of 6.5, with no band below 6.0"; "end it after 2 months with 6 months' notice" where it
says "after 6 months by giving 2 months' notice".  Both values stand in the sentence, so neither was missing, and each
was "stated" by its twin.  The word next to a number gives its role; a claim's number whose neighbour is, in the
evidence, the neighbour of exactly one other value of its kind (and not of its own twin) has taken that value's place.

**A small whole count of a large unit is rounded to the nearest one**: "two months' rent" was taken as a rounding
of "five weeks' rent" (one whole month of tolerance); now half a unit below ten ("2 months" is 1.5 to 2.5 months).
A value a claim restates from its evidence is one addend, not two: "15 euros" in the claim and in its (overlapping)
windows made "16 to 30" a sum, 15 + 15.  Spans and age groups said in words ("half an hour", "an hour and a half", "over-18s") are quantities, and a time of
day worked out with a span the claim states ("at 9:00, 45 minutes after registration opens at 8:15") is no missing
number -- unless the texts state that time, which is then compared as stated (a swap stays a swap).
"Two days after" the 3 February detection, on 5 February, is worked out from the two dates (derived.py) -- it had
passed as a rounding of "72 hours".
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

ENGLISH = "Applicants must show an IELTS score of 6.5, with no band below 6.0. The course starts in October."
LEASE = ("A deposit of five weeks' rent is held in a protection scheme. Either party may end the tenancy after 6 months by "
         "giving 2 months' notice.")
STUDY = "The programme lasts one year full-time or two years part-time."
PUPPIES = ("Puppies should be wormed every 2 weeks until they are 12 weeks old, then once a month until they reach 6 months "
           "of age.")
JURY = "After deliberating for more than 35 hours over parts of seven days, the jury reached a verdict."
FARES = "A return ticket costs 24 euros, or 15 euros with a Youth Card for passengers aged 16 to 25."
BREACH = ("On 3 February at 02:40 UTC the company detected unauthorised access. It notified the regulator on 5 February, "
          "within the 72-hour deadline.")
SENTENCES = ("Paitsel received 24 months in prison and 24 months of supervised release. Bailey received 48 months in "
             "prison and 24 months of supervised release.")


@pytest.mark.parametrize("document, answer", [
    (ENGLISH, "You need IELTS 6.0 overall, with no band below 6.5."),
    (LEASE, "After 2 months, either of you can end it with 6 months' notice."),
    (STUDY, "It takes two years full-time or one year part-time."),
    (LEASE, "The deposit is two months' rent."),
])
def test_a_number_in_the_wrong_place_is_contradicted(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.contradicted_claims, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document, answer", [
    (ENGLISH, "An IELTS score of 6.5 is needed, and no band may be below 6.0."),
    (LEASE, "After 6 months either side can give 2 months' notice to end it. The deposit is five weeks' rent."),
    (STUDY, "One year full-time, or two years part-time."),
    (SENTENCES, "Paitsel received 24 months in prison, while Bailey received 48 months in prison."),
    (LEASE, "The deposit is about a month's rent."),
    (PUPPIES, "Worm your puppy every 2 weeks until it is 12 weeks old. From then until six months old, worm it once a month."),
    (JURY, "The jury deliberated for over 35 hours across seven days."),
    (BREACH, "The regulator was notified on 5 February, two days after the breach was detected."),
])
def test_numbers_in_their_place_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


def test_a_restated_value_is_no_second_addend(embedder) -> None:
    result = score(embedder, FARES, "It's 24 euros, or 15 euros with a Youth Card if you're 16 to 30.")
    assert [(c.outcome.value, c.reason, c.missing_numbers) for c in result.claims] == [("not_found", "number_missing", ("30",))]


SHOW = "The late show starts at 22:00 and is for over-18s only. The matinee is open to everyone."
CONGRESS = "Registration opens at 8:15. The first talk begins 45 minutes after registration opens."
SAUNA = "The pool closes at 21:00 on weekdays; the sauna closes half an hour earlier."


def test_spans_and_age_groups_said_in_words(embedder) -> None:
    # "over-18s" is an age bound, "half an hour" a span; a time worked out with a span the claim states is no
    # missing number, but a changed age is a changed number.
    wrong = score(embedder, SHOW, "The late show is for over-16s only.")
    assert wrong.contradicted_claims, outcomes(wrong)
    for document, answer in ((CONGRESS, "Registration opens at 8:15 and the first talk starts 45 minutes later, at 9:00."),
                             (SAUNA, "On weekdays the sauna closes at 20:30, half an hour before the pool."),
                             (SHOW, "Only over-18s can see the late show, which starts at 22:00.")):
        result = score(embedder, document, answer)
        assert result.verdict is Verdict.GROUNDED, (answer, result.explanation, outcomes(result))


POOL = "The pool is open from 6:30 to 21:00 on weekdays and from 8:00 to 18:00 at weekends. Lessons cost 9 euros."
BRIDGE = "The bridge opened in 2017 and the tunnel in 2019. Tolls were abolished in 2021."


def test_a_short_answer_picking_a_figure_its_sentence_offers(embedder) -> None:
    # "Saturday" is no word of the sentence: which of its two parts the question means, the words cannot tell.
    kept = score(embedder, POOL, "From 8:00 to 18:00.", "When is the pool open on Saturday?")
    assert not kept.contradicted_claims, outcomes(kept)
    # Every word of the question is in the sentence: the part it means is the bridge's.
    wrong = score(embedder, BRIDGE, "2019.", "When did the bridge open?")
    assert wrong.contradicted_claims, outcomes(wrong)
