"""Issue 21, seventh round: classes of our own, each unfaithful case grounded on the code before.

**What a document says is not possible, said to be possible.**

"Members may cancel after the minimum term; cancellations by phone are not accepted" against "Yes, you can cancel by
phone": the claim never says "accepted", so no negation of the evidence governs a word both sides share, and the
affirmed clause (cancel after the minimum term) agrees with it.  A denial of a permission word (accepted, allowed,
eligible, available, refundable ...) and a claim that says "can" or answers "Yes" without that word, naming what only
the denied clause names, is a contradiction -- also where the claim adds a condition from another sentence.

**A prohibition** ("Never use vinegar to clean the tank") is a denied permission too, and a claim that warns against
what the evidence prohibits ("Yes, mixing this cleaner with bleach is dangerous" / "Never mix this cleaner with
bleach") says the same thing: a warning word on the plain side cancels the negation (it did not: on DelucionQA train
13 contradicted claims of clean answers were of this kind, "Yes, it is dangerous to spin your wheels").

**"No more than" is a quantifier** ("at most"), as "no later than" and "no fewer than" are: they were taken out as
negations that negate nothing, so "no more than £1,200" met "at least £1,200" as no opposite.

**An "only" dropped for an added alternative**: "accepted only at the Harlow Road centre" against "at the Harlow Road
centre or at any of the bottle banks".

**Opposites of instructions and offers**: remove / keep, remove / stay, optional / included.

**A condition waived**: "covered regardless of how long the property has been unoccupied" / "covered, but not if the
property has been unoccupied for more than 60 days" (also "no matter", "whatever", against "if", "unless", "only
when", "provided", "as long as"; at least two of the waived words in the condition).

**A relative change worked out** ("from 3,100 to 4,200, a 35% rise") is no missing number, nor a multiple the claim
states times a value ("double the weekday price, so 24 dollars"), nor a count worked out with the user's own number
("I am bringing 9 shirts" / "the first 5 are free, so you pay for 4"); a wrong one still is.
"""

from __future__ import annotations

import pytest

from ragtap.scoring.quantities import quantities
from ragtap.types import Verdict

from test_contradictions import outcomes, score

POOL = ("Members may bring up to two guests per visit. Guests under 16 are not allowed in the sauna. Towels can be "
        "rented at the front desk for 3 euros.")
PHARMACY = ("Prescriptions can be collected from 9:00 to 18:00 on weekdays. Controlled medicines are not available for "
            "home delivery; all other medicines can be delivered within 48 hours.")
AIRLINE = ("Economy Light tickets can be changed for a fee of 60 euros. Refunds are not offered on Economy Light "
           "tickets, and seat selection costs extra.")
GRANTS = ("Applicants must live in the county and earn less than 30,000 euros a year. Full-time students are not "
          "eligible for the home-improvement grant.")
PARKS = ("Campfires are allowed in the designated fire rings; drones are not permitted anywhere in the park. Dogs must "
         "be kept on a leash.")
MUSEUM = ("Photography without flash is welcome in the permanent collection. Tripods and selfie sticks are not "
          "accepted in the galleries.")

KETTLE = ("Clean the tank with warm water once a month. Never use vinegar to clean the tank, as it damages the seals. "
          "Do not open the lid while the water is boiling.")
CLEANER = "Never mix this cleaner with bleach. Keep it away from children."
WASTE = ("Household waste is collected on Mondays in grey bins. Batteries must not go in the grey bin; take them to a "
         "collection point at any supermarket.")
GALA = ("A guest who cannot attend may send a substitute, provided the organiser is told by Friday. Pets must not be left "
        "alone in the rooms during the gala dinner.")
OVEN = "Do not open the oven door during the first 20 minutes of baking."

PERMISSIONS = [
    (KETTLE, "Yes, vinegar is fine for cleaning the tank.", False),
    (KETTLE, "Yes, you can clean the tank with vinegar once a month.", False),
    (KETTLE, "You can clean the tank with warm water once a month, but never with vinegar.", True),
    (KETTLE, "Opening the lid while the water is boiling is dangerous.", True),
    (CLEANER, "Yes, mixing this cleaner with bleach is dangerous.", True),
    (CLEANER, "You can mix this cleaner with bleach.", False),
    (OVEN, "Avoid opening the oven door during the first 20 minutes of baking.", True),
    # a modal's prohibition ("must not"), not one inside a relative clause ("a guest who cannot attend")
    (WASTE, "Yes, batteries can go in the grey bin, which is collected on Mondays.", False),
    (WASTE, "Household waste goes in the grey bin on Mondays; batteries go to a collection point at a supermarket.", True),
    (GALA, "Yes, you can send a substitute if you tell the organiser by Friday.", True),
    (GALA, "Yes, pets can be left alone in the rooms during the gala dinner.", False),
    (OVEN, "You can open the oven door during the first 20 minutes of baking.", False),
    (POOL, "Yes, guests under 16 can use the sauna as long as they come with a member.", False),
    (POOL, "Guests under 16 can't go into the sauna, but members may bring up to two guests per visit.", True),
    (POOL, "Yes, you can rent a towel at the front desk for 3 euros.", True),
    (PHARMACY, "Yes, controlled medicines can be delivered to your home within 48 hours.", False),
    (PHARMACY, "Medicines other than controlled ones can be delivered to your home within 48 hours.", True),
    (PHARMACY, "Yes, you can collect prescriptions on weekdays between 9:00 and 18:00.", True),
    (AIRLINE, "Yes, Economy Light tickets can be refunded if you pay the 60-euro fee.", False),
    (AIRLINE, "You can change an Economy Light ticket for 60 euros, but you can't get a refund.", True),
    (GRANTS, "Yes, full-time students can apply for the home-improvement grant if they earn less than 30,000 euros.", False),
    (GRANTS, "You can apply if you live in the county and earn under 30,000 euros a year, unless you are a full-time student.", True),
    (PARKS, "Yes, drones can be flown in the park, and campfires are allowed in the fire rings.", False),
    (PARKS, "Campfires are allowed, but only in the designated fire rings.", True),
    (PARKS, "Yes, you can have a campfire in the fire rings, but leave your drone at home.", True),
    (MUSEUM, "Yes, you can bring a tripod into the galleries.", False),
    (MUSEUM, "Yes, you can take photos without flash in the permanent collection.", True),
]


# "no more than", "no later than", "no fewer than" are quantifiers, not negations: they were dropped before
SCHOLARSHIP = ("The scholarship is renewed each year if the student passes at least 48 credits. Applications must arrive no "
               "later than 31 May, and each class has no more than 20 students.")
QUANTIFIERS = [
    (SCHOLARSHIP, "The scholarship is renewed each year as long as the student passes no more than 48 credits.", False),
    (SCHOLARSHIP, "The scholarship is renewed each year if the student passes no fewer than 48 credits.", True),
    (SCHOLARSHIP, "Applications must arrive no earlier than 31 May.", False),
    (SCHOLARSHIP, "Applications have to arrive by 31 May at the latest, and classes have at most 20 students.", True),
]


# the evidence restricts something with "only"; the claim, without "only", adds an alternative the sentence lacks
SHOP = ("Refunds are issued only to the original payment card, within 10 days. Store credit and gift vouchers are "
        "sold at the customer desk.")
CLINIC = "The travel vaccine is given only by a registered nurse. Pharmacists can advise on malaria tablets."
ONLY = [
    (SHOP, "Refunds go back to the original payment card or onto a gift voucher, within 10 days.", False),
    (SHOP, "Refunds are paid back to the original payment card within 10 days.", True),
    (CLINIC, "The travel vaccine can be given by a registered nurse or a pharmacist.", False),
    (CLINIC, "A registered nurse gives the travel vaccine; a pharmacist can advise you on malaria tablets.", True),
]


# a "without X" the claim repeats from its evidence describes the thing, it excepts nothing ("including X" is still seen)
LAKES = "Swimming without a wetsuit is allowed in every lake of the park except Lake Morna, whose water stays below 12 degrees."
# a condition the evidence sets, waived by the claim ("regardless of", "no matter", "whatever")
RETURNS = ("Items can be returned within 30 days unless they have been worn. Guest passes are free, but only if the "
           "member attends with the guest.")
ZOO = "A weekday ticket to the zoo costs 12 dollars. Weekend tickets cost twice as much, and children under 3 go free."
# opposites of instructions and offers: remove / keep, remove / stay, optional / included
HEATER = "Remove the protective film from the panel before switching on the heater. Airport transfers are optional and cost 30 euros."
OPPOSITES = [
    (HEATER, "Keep the protective film on the panel when you switch on the heater.", False),
    (HEATER, "The protective film can stay on the panel while the heater is switched on.", False),
    (HEATER, "Take the protective film off the panel before you switch the heater on.", True),
    (HEATER, "The airport transfer is included in the package.", False),
    (HEATER, "An airport transfer is optional; it costs 30 euros.", True),
]


MEMBERS = "Club membership grew from 1,250 in 2022 to 1,600 in 2024. Ticket prices went from 40 euros to 50 euros."
CHANGES = [
    (MEMBERS, "Club membership grew from 1,250 to 1,600 between 2022 and 2024, an increase of 28%.", True),
    (MEMBERS, "Ticket prices rose by 25%, from 40 to 50 euros.", True),
    (MEMBERS, "Club membership grew from 1,250 to 1,600, an increase of 35%.", False),
    (MEMBERS, "Ticket prices rose by 20%, from 40 to 50 euros.", False),
    (LAKES, "Yes, swimming without a wetsuit is allowed in every lake of the park, including Lake Morna.", False),
    (LAKES, "Yes, you can swim without a wetsuit in every lake of the park except Lake Morna.", True),
    (RETURNS, "Items can be returned within 30 days regardless of whether they have been worn.", False),
    (RETURNS, "Guest passes are free no matter whether the member attends with the guest.", False),
    (RETURNS, "You can return items within 30 days, as long as they have not been worn.", True),
    (RETURNS, "Guest passes are free if the member attends with the guest.", True),
    # a multiple the claim states, times a value of the evidence
    (ZOO, "Weekend tickets are double the weekday price, so a weekend ticket costs 24 dollars.", True),
    (ZOO, "Weekend tickets are double the weekday price, so a weekend ticket costs 30 dollars.", False),
]


@pytest.mark.parametrize("document,answer,faithful", PERMISSIONS + QUANTIFIERS + ONLY + OPPOSITES + CHANGES)
def test_seventh_round_classes(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))


def test_a_number_ending_its_sentence_takes_no_unit_from_the_next_one() -> None:
    (year,) = [q for q in quantities("The hall reopened in 2024. Ticket prices went up.") if q.value == 2024]
    assert year.is_year and year.slot == "year_date"


def test_a_number_with_a_thousands_comma_is_no_year() -> None:
    (count,) = quantities("Membership grew from 1,250 to more.")
    assert not count.is_year and count.slot != "year_date"


LAUNDRY = "The first 5 shirts of each order are washed free; further shirts cost 3 dollars each."


@pytest.mark.parametrize("shirts,faithful", [(4, True), (6, False)])
def test_a_count_worked_out_from_the_users_own_number(embedder, shirts: int, faithful: bool) -> None:
    answer = f"The first 5 shirts are free, so you pay for {shirts} shirts at 3 dollars each."
    result = score(embedder, LAUNDRY, answer, question="I am bringing 9 shirts. What will it cost?")
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))
