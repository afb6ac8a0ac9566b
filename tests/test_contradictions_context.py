"""Claims read in context, and exceptions (issue 21): classes a blind hand-made set showed, tested on cases of our own.

- a claim opening with a pronoun takes the subject of the claim before it for alignment and the checks
  (scoring/subjects.py): "The Arden Bridge opened in 1932. It is longer than the Kessel Bridge." compares the Arden
  Bridge's length, and "It will take place at the Town Hall" is checked at all;
- an exception turned into an inclusion, or the other way round (scoring/exceptions.py): "including the airport
  express" where day tickets are "not valid on the airport express"; "all parts except the battery" where the
  warranty covers "all parts, including the battery";
- a thing the evidence says there is none of, affirmed by a claim that takes its other words from another sentence
  ("guests can use the hotel's swimming pool" after "every room has a kettle" / "The hotel has no swimming pool").

Each bad case below is wrong on the code before (grounded, or flagged for another reason than a contradiction of
that claim); the faithful neighbours (pronoun claims, "except" restatements, "including" where the evidence
includes, "No, X is not covered") stay grounded -- two of them, a negation the evidence words as an exception
("No, flood damage is not covered", "..., but not the spinning class"), were contradicted by the code before.
"""

from __future__ import annotations

import pytest

from ragtap.scoring.claims import split_claims
from ragtap.types import ClaimOutcome, Verdict

from test_contradictions import outcomes, score

BRIDGES = ("The Arden Bridge opened in 1932 and is 410 metres long. The Kessel Bridge, built in 1990 further upstream, spans "
           "520 metres.")
FAIR = ("The spring fair is held on 12 May this year. Because of repairs to the Town Hall, the fair will take place in the "
        "Corn Exchange, not the Town Hall.")
OBSERVATORY = "The Hallam Observatory was founded in 1869 by the astronomer Clara Voss. Its main telescope has a 60 cm mirror."
LEAFLET = ("Dosaprin tablets should be swallowed whole with a glass of water. The tablets must not be crushed or chewed, because "
           "the coating releases the medicine slowly.")
INSURANCE = "The home policy covers all water damage except damage caused by flooding. Theft is covered up to 5,000 euros."
WARRANTY = "The two-year warranty covers all parts of the e-bike, including the battery. Tyres and brake pads are wear parts."
TRANSIT = ("Day tickets cost 7 euros and are valid on all buses and trams, but not on the airport express. Children under 6 "
           "travel free.")
MUSEUM = ("The museum is open daily from 10:00 to 17:00. No visits are possible on the first Monday of each month, when the "
          "galleries are cleaned.")
REMOTE = ("Employees may work remotely on any weekday other than Tuesday, when the whole team meets in the office. Laptops "
          "are provided by the company.")
SCHOOL = ("The school's budget for 2023 was 2.4 million pounds, most of it from the local authority and the rest from "
          "parent contributions. The school received no private donations last year.")
HOTEL = ("All rooms have a kettle and a safe. The hotel has no swimming pool, but guests can use the leisure centre next "
         "door for free.")

GYM = "Members get free entry to all classes except the spinning class. Towels can be rented for 2 euros."
FARES = ("There is no charge for children under 5 including infants on a lap. Guide dogs travel free in all carriages, "
         "including the dining car.")
LEAGUE = "The Harriers won the league in 2019 with 84 points. Their rivals, the Falcons, finished second with 79 points."

BAD = [
    # a pronoun's subject: a comparison gets its first side, a short claim is checked at all, a number is compared in
    # the sentence about the subject
    (BRIDGES, "The Arden Bridge opened in 1932. It is longer than the Kessel Bridge.", 1),
    (OBSERVATORY, "The Hallam Observatory was founded by Clara Voss. It was founded in 1875.", 1),
    (LEAFLET, "Dosaprin tablets are swallowed whole. They can be crushed.", 1),
    (LEAGUE, "The Falcons finished second in 2019. They scored 84 points.", 1),
    # an exception turned into an inclusion
    (INSURANCE, "The home policy covers water damage of every kind, including damage caused by flooding.", 0),
    (TRANSIT, "Day tickets can be used on every bus and tram, including the airport express.", 0),
    (MUSEUM, "The museum is open every day from 10:00 to 17:00, including the first Monday of each month.", 0),
    (REMOTE, "You can work remotely on any weekday, including Tuesday.", 0),
    (INSURANCE, "All water damage is covered by the home policy.", 0),
    (GYM, "Members get free entry to yoga, pilates and the spinning class.", 0),
    # an inclusion turned into an exception
    (WARRANTY, "The two-year warranty covers all parts of the e-bike except the battery.", 0),
    # a thing there is none of, affirmed by a claim that takes its other words from another sentence
    (HOTEL, "Every room has a kettle and a safe, and guests can use the hotel's swimming pool.", 0),
    (HOTEL, "Besides a kettle and a safe in each room, the hotel offers guests a swimming pool.", 0),
]

FAITHFUL = [
    (BRIDGES, "The Arden Bridge opened in 1932. It is shorter than the Kessel Bridge, which spans 520 metres."),
    (FAIR, "The spring fair is on 12 May. It will take place in the Corn Exchange."),
    (OBSERVATORY, "The Hallam Observatory was founded in 1869 by Clara Voss. Its main telescope has a 60 cm mirror."),
    (OBSERVATORY, "Clara Voss founded the Hallam Observatory in 1869. She was an astronomer."),
    (LEAFLET, "Swallow Dosaprin tablets whole with water. They must not be crushed or chewed."),
    (LEAGUE, "The Falcons finished second in 2019. They had 79 points."),
    (INSURANCE, "Water damage is covered by the home policy, except damage caused by flooding."),
    (INSURANCE, "No, flood damage is not covered by the home policy."),
    (WARRANTY, "The two-year warranty covers every part of the e-bike, including the battery."),
    (TRANSIT, "Day tickets are valid on all buses and trams, but not on the airport express."),
    (TRANSIT, "No, the day ticket does not cover the airport express."),
    (MUSEUM, "The museum opens daily from 10:00 to 17:00, apart from the first Monday of each month."),
    (REMOTE, "Remote work is allowed on every weekday other than Tuesday."),
    (GYM, "Members get free entry to yoga and pilates, but not the spinning class."),
    (GYM, "Members get free entry to all classes apart from the spinning class."),
    (SCHOOL, "Most of the school's budget came from the local authority; it received no private donations last year."),
    (SCHOOL, "Most of the school's budget came from the local authority, and the rest from parent contributions."),
    (HOTEL, "There is no swimming pool at the hotel, but guests can use the leisure centre next door for free."),
    # "including X" where the evidence's negation includes X too ("no charge ... including infants")
    (FARES, "Children under 5 ride free, including infants on a lap."),
    (FARES, "Guide dogs travel free in every carriage, including the dining car."),
]


@pytest.mark.parametrize("document,answer,index", BAD)
def test_a_claim_read_in_context_or_an_exception_turned_around_is_contradicted(embedder, document: str, answer: str, index: int) -> None:
    result = score(embedder, document, answer)
    claim = result.claims[index]
    assert claim.outcome is ClaimOutcome.CONTRADICTED, outcomes(result)
    assert result.verdict is not Verdict.GROUNDED


@pytest.mark.parametrize("document,answer", FAITHFUL)
def test_faithful_pronoun_claims_and_exceptions_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))


def test_a_pronoun_claim_carries_the_subject_of_the_claim_before_it() -> None:
    text = ("The Hallam Observatory, on Carr Hill, was founded in 1869. It was built by Clara Voss. It's still in use. "
            "It is important to book a visit. In 1990, a new dome was added. It has a 60 cm mirror.")
    resolved = [c.resolved_text for c in split_claims(text)]
    assert resolved == [
        "The Hallam Observatory, on Carr Hill, was founded in 1869.",
        "The Hallam Observatory was built by Clara Voss.",  # a pronoun claim after another keeps the subject
        "The Hallam Observatory is still in use.",
        "It is important to book a visit.",  # an expletive "It" stands for nothing
        "In 1990, a new dome was added.",
        "It has a 60 cm mirror.",  # an adverbial opening is no subject
    ]
    subject = split_claims(text)[1].subject
    assert subject is not None and text[subject.start : subject.end] == "The Hallam Observatory"


def test_a_demonstrative_before_a_noun_is_no_pronoun() -> None:
    claims = split_claims("The Gold pass costs 90 euros. This is the best value. This pass is valid for a year.")
    assert [c.resolved_text for c in claims[1:]] == ["The Gold pass is the best value.", "This pass is valid for a year."]
