"""Contradictions and precision, sixth round (issue 21): classes found by a blind hand-made set, tested on cases of our own.

The sixth set (`SIXTH_SET`, 55 cases in 8 domains: hotel rules, a syllabus, a lab safety sheet, a tax guide, a trail
guide, a museum page, a fact sheet about Mars, an earnings note) was written by someone who had not read the rules,
and run once before any change: 32 of 55 right.  Its misses that were classes were fixed as classes; each class has
cases here in other domains (`CLASSES`, each wrong on the code before) with faithful neighbours that must stay
grounded.  The misses left are listed (`SIXTH_SET_MISSES`): a listed case that comes right must leave the list.
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

# ------------------------------------------------------------------------------------------ the classes, our cases
PARKING = ("Parking in the municipal garage costs 3 euros per hour, up to a maximum of 20 euros per day. Residents with "
           "a permit park free of charge on weekdays.")
STADIUM = ("Umbrellas are allowed in the stadium but must be closed during the match. Glass bottles are not permitted. "
           "Gates open 90 minutes before kick-off.")
LIBRARY = ("The central library reopened in September 2021 after an 18-month renovation; it is closed on Mondays. The "
           "farmers' market is held every Saturday from April to October on the square in front of it. Library cards are "
           "renewed yearly at the front desk.")
SERVER = ("Database backups run nightly at 02:00 and are kept for 30 days. The cable with the blue plug goes into port A; "
          "the one with the yellow plug goes into port B.")
MOONS = ("Saturn has more than 140 known moons, among them Titan and Rhea. Titan is the largest of them and has a thick "
         "atmosphere of nitrogen, while Rhea has almost none.")
RESULTS = ("Quarterly sales fell 4% to 85 million dollars. Net profit slipped to 12 million as higher wages outweighed "
           "price increases. Chief Executive Maria Lopez said the company would keep its dividend unchanged.")
CHOIR = ("Singers must attend at least 75% of the rehearsals to perform in the concert. Tickets are free for children "
         "under 10; on the opening night they are free for all visitors.")
RESTAURANT = ("Tables for up to 8 people can be booked online, subject to availability. Larger groups must call the "
              "restaurant. Claims about a bill are not accepted more than 30 days after the visit, and a receipt is needed.")

CLASSES = [
    # an opposite qualifying a number both sides state ("a [minimum] of 20 euros" / "a [maximum] of 20 euros")
    (PARKING, "Parking costs 3 euros an hour, with a minimum of 20 euros per day.", False),
    (PARKING, "Parking costs 3 euros an hour, but never more than 20 euros a day.", True),
    (PARKING, "The garage charges 3 euros per hour and at most 20 euros per day.", True),
    # an opposite the claim meets across the evidence sentence's clauses; a verb's doubled consonant ("banned")
    (STADIUM, "Umbrellas are banned from the stadium during the match.", False),
    (STADIUM, "You may bring an umbrella into the stadium, but you have to keep it closed during the match.", True),
    (STADIUM, "Glass bottles are banned.", True),
    # members of a closed class: months, weekdays, how often, colours
    (LIBRARY, "The central library reopened in April 2021 after an 18-month renovation.", False),
    (LIBRARY, "The farmers' market is held every Monday on the square in front of the library.", False),
    (LIBRARY, "Library cards have to be renewed monthly at the front desk.", False),
    (LIBRARY, "The library reopened in September 2021, after a renovation of a year and a half.", True),
    (LIBRARY, "On Saturdays there is a farmers' market on the square in front of the library.", True),
    (LIBRARY, "You renew your library card once a year at the front desk.", True),
    (SERVER, "Backups of the database run weekly at 02:00.", False),
    (SERVER, "The cable with the red plug goes into port A.", False),
    (SERVER, "Every night at 02:00 the database is backed up, and each backup is kept for 30 days.", True),
    (SERVER, "The blue plug goes into port A and the yellow one into port B.", True),
    # a name of the sentence moved into its subject's place, the rest of the claim from the sentence before
    (MOONS, "Rhea is the largest moon of Saturn and has a thick atmosphere of nitrogen.", False),
    (MOONS, "Titan, the largest moon of Saturn, has a thick nitrogen atmosphere.", True),
    (MOONS, "Rhea has almost no atmosphere.", True),
    # irregular verbs: "fell" / "rose" are opposites, "fell" / "fallen" one verb; an opposite must qualify the same thing
    (RESULTS, "Quarterly sales rose 4% to 85 million dollars.", False),
    (RESULTS, "Sales have fallen by 4% this quarter, to 85 million dollars.", True),
    (RESULTS, "Net profit slipped to 12 million because wage costs more than offset price rises.", True),
    # "all X" where the evidence means part of X (a share of it, or X narrowed by a number)
    (CHOIR, "Singers have to attend all rehearsals to perform in the concert.", False),
    (CHOIR, "Tickets are free for all children.", False),
    (CHOIR, "To sing in the concert, a singer has to come to at least 75% of the rehearsals.", True),
    (CHOIR, "Children under 10 get in free, and on the opening night all visitors do.", True),
    # a title's short form is no missing name
    (RESULTS, "CEO Maria Lopez said the dividend will stay unchanged.", True),
    # "past the deadline" is "after" it; a deferral after an answer does not make it a refusal
    (RESTAURANT, "No. Claims more than 30 days past the visit won't be accepted, and even within those 30 days you need the receipt.", True),
    (RESTAURANT, "Yes, you can book a table for up to 8 people online, though it depends on availability.", True),
]


@pytest.mark.parametrize("document,answer,faithful", CLASSES)
def test_sixth_round_classes(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))


def test_an_answer_that_only_defers_is_still_a_refusal(embedder) -> None:
    result = score(embedder, RESTAURANT, "It depends on the restaurant.", question="Can I book a table for 10 people online?")
    assert result.verdict is Verdict.REFUSAL, outcomes(result)
