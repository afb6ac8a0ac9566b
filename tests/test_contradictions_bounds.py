"""Issue 21: a claim that restates the bound or the condition of its evidence wrongly, while its words mostly match.
Cases of our own, 24 documents in as many settings; each unfaithful one came back grounded on the code before (main at
35a1470, and 7a06b3a).

**A bound told with the wrong edge** (`scoring/bounds.py`, `bound_conflicts`): "3 or more displays" where the
sentence says "more than 3 displays", "over 65" for "65 and over", "aged 12 or under" for "under 12", "fewer than 4
tablets" for "up to 4 tablets", "more than 2 years" for "at least 2 years", "older than 8" for "at least 8 years
old".  quantities.py reads "more than 3" as a hedged 3, which agrees with 3, so no check saw the bound.  Faithful
neighbours: the same bound in other words ("65 or older" / "65 and over", "at most" / "up to" / "no more than",
"at least 18" / "18 or older"), and for whole counts the next count's bound ("4 or more displays" / "more than 3
displays", "aged 4 and under" / "under 5"), which was a missing number before; a count of thousands is an estimate
("over 2,000 runners" / "more than 2,000"); a negated bound is compared only with a negated one ("must not take
more than 2" is no "more than 2"); a span read backwards ("up to 24 hours before") is no bound.

**A restriction dropped** (`dropped_restrictions`): the evidence says something of a thing restricted by a
threshold ("Arrays over 4 kW must be notified", "free for children under 5") or by a modifier the documents set
against another of its kind ("unexcused absences", where they also speak of excused ones; "full-time residents" /
"part-time residents"), and the claim says it of the thing at large, in the evidence's words, with no number and
no restricting word of its own.  And a "Yes" that drops the condition of its sentence, or one of its parts joined by
"and" ("Yes, pets are allowed" / "Pets are allowed only if the landlord agrees in writing"; "Yes, refunds are given
for items returned within 30 days" / "if the item is unused and returned within 30 days").  Faithful neighbours: the restriction in
the claim's own words ("larger arrays, over 4 kW", "young children", "unjustified absences"), the condition kept,
a detail no other sentence contrasts ("the red brake warning light" / "the brake light"), and a condition the claim copies
from its evidence ("when accompanied by a paying adult"), which restricts nothing in the claim's own words.
"""

from __future__ import annotations

import pytest

from ragtap.scoring.bounds import bounds, restated_bound
from ragtap.scoring.quantities import quantities
from ragtap.types import Verdict

from test_contradictions import outcomes, score

SYLLABUS = ("Attendance is taken at every seminar. More than two unexcused absences result in a failing grade for the "
            "course. Excused absences, such as illness with a doctor's note, do not count towards this limit.")
SOLAR = ("Arrays over 4 kW must be notified to the network operator before connection. Smaller arrays only need to be "
         "registered with the operator within 28 days of installation.")
FARES = ("Passengers aged 65 and over travel free on weekday buses after 9:30. Children under 5 travel free at all "
         "times; older children pay the child fare.")
LEAFLET = "Children under 12 must not take more than 2 tablets a day. Adults may take up to 4 tablets a day, at least 4 hours apart."
LEAVE = "Employees with at least 2 years of service are entitled to 25 days of annual leave. Others receive 20 days."
SHIPPING = "Orders over 50 pounds ship free within the UK. Orders to other countries are charged by weight."
GYM = ("Members must be at least 18 to use the weights room. The red brake warning light on the treadmill comes on "
       "when the emergency stop is pulled.")
SIGNS = "A licence from the council is required to operate more than 3 illuminated displays in a shop window."
ZOO = ("Children under 3 enter free. Visitors aged 65 and over pay the reduced fare of 9 euros. Groups of 10 or more "
       "people get a 15% discount if they book online.")
AIRLINE = ("Each passenger may check in one bag of up to 23 kg. Bags weighing more than 23 kg are charged 50 euros. "
           "Unaccompanied minors must be at least 8 years old.")
BANK = ("Savings accounts with a balance over 10,000 euros earn 2.5% interest. Withdrawals of more than 5,000 euros "
        "must be requested two days in advance.")
MARATHON = ("More than 2,000 runners took part in the city marathon on Sunday. Organisers said over 40,000 spectators "
            "lined the route.")

BOUNDS = [
    (SYLLABUS, "Two or more unexcused absences result in a failing grade for the course.", False),
    (SYLLABUS, "Three or more unexcused absences result in a failing grade for the course.", True),
    (SYLLABUS, "If you have more than two unexcused absences, you fail the course.", True),
    (SOLAR, "Arrays of 4 kW or more must be notified to the network operator before connection.", False),
    (SOLAR, "Arrays larger than 4 kW have to be notified to the network operator before they are connected.", True),
    (FARES, "Passengers over 65 travel free on weekday buses after 9:30.", False),
    (FARES, "Passengers who are 65 or older travel free on weekday buses after 9:30.", True),
    (FARES, "Children aged 5 or younger travel free at all times.", False),
    (FARES, "Children younger than 5 ride free at any time.", True),
    (FARES, "Children aged 4 and under travel free at all times.", True),
    (LEAFLET, "Children aged 12 or under must not take more than 2 tablets a day.", False),
    (LEAFLET, "Adults may take fewer than 4 tablets a day, at least 4 hours apart.", False),
    (LEAFLET, "Adults can take at most 4 tablets a day, at least 4 hours apart.", True),
    (LEAFLET, "Adults may take no more than four tablets daily, spaced at least 4 hours apart.", True),
    (LEAVE, "Employees with more than 2 years of service are entitled to 25 days of annual leave.", False),
    (LEAVE, "Staff who have worked there for 2 years or more get 25 days of annual leave.", True),
    (SHIPPING, "Orders of 50 pounds or more ship free within the UK.", False),
    (SHIPPING, "Orders above 50 pounds get free shipping within the UK.", True),
    (GYM, "You must be over 18 to use the weights room.", False),
    (GYM, "You must be 18 or older to use the weights room.", True),
    (SIGNS, "A licence from the council is required to operate 3 or more illuminated displays in a shop window.", False),
    (SIGNS, "You need a licence from the council to run 4 or more illuminated displays in a shop window.", True),
    (ZOO, "Groups of more than 10 people get 15% off when they book online.", False),
    (ZOO, "Groups of at least 10 people get 15% off when they book online.", True),
    (ZOO, "Seniors aged 65 or older pay a reduced fare of 9 euros.", True),
    (AIRLINE, "Unaccompanied minors have to be older than 8.", False),
    (AIRLINE, "Unaccompanied minors have to be 8 or older.", True),
    (AIRLINE, "You can check in one bag weighing up to 23 kg.", True),
    (AIRLINE, "Bags heavier than 23 kg cost 50 euros extra.", True),
    (BANK, "Accounts with 10,000 euros or more earn 2.5% interest.", False),
    (BANK, "Accounts with more than 10,000 euros earn 2.5% interest.", True),
    (BANK, "If you want to withdraw more than 5,000 euros, you have to ask two days ahead.", True),
    (MARATHON, "Over 2,000 runners took part in the city marathon.", True),
    (MARATHON, "More than 40,000 spectators lined the route, organisers said.", True),
]

GRANT = ("The home-improvement grant is open to full-time residents of the county. Part-time residents may apply for "
         "the smaller repair voucher.")
POOL = "Entry to the pool is free for children under 5. Swimming lessons start at 10:00 on Saturdays."
RETURNS = "Refunds are given if the item is unused and returned within 30 days with its receipt. Opened software cannot be returned."
DEPOSIT = ("The deposit is returned within 14 days only if the apartment is left clean and undamaged. Keys must be "
           "handed in at the front office.")
RENT = ("Tenants must give at least one month's notice before moving out. Pets are allowed only if the landlord agrees "
        "in writing. Rent increases of more than 5% a year are not permitted.")

RESTRICTIONS = [
    (SYLLABUS, "More than two absences result in a failing grade for the course.", False),
    (SYLLABUS, "More than two unjustified absences result in a failing grade for the course.", True),
    (SOLAR, "Any array must be notified to the network operator before connection.", False),
    (SOLAR, "Arrays must be notified to the network operator before connection.", False),
    (SOLAR, "Larger arrays, over 4 kW, must be notified to the network operator before connection.", True),
    (SOLAR, "Smaller arrays only need to be registered with the operator within 28 days of installation.", True),
    (FARES, "Children travel free at all times.", False),
    (SHIPPING, "Orders ship free within the UK.", False),
    (GRANT, "The home-improvement grant is open to residents of the county.", False),
    (GRANT, "The home-improvement grant is open to full-time county residents.", True),
    (POOL, "Entry to the pool is free for children.", False),
    (POOL, "Entry to the pool is free for young children.", True),
    (POOL, "Entry to the pool is free for children younger than 5.", True),
    (GYM, "The brake light on the treadmill comes on when the emergency stop is pulled.", True),
    (RETURNS, "Yes, refunds are given.", False),
    (RETURNS, "Yes, refunds are given if the item is unused and comes back within 30 days with its receipt.", True),
    (RETURNS, "Yes, refunds are given for items returned within 30 days with the receipt.", False),  # one part of it dropped
    (RETURNS, "Yes, refunds are given for unused items returned within 30 days with the receipt.", True),
    (DEPOSIT, "Yes, the deposit is returned within 14 days.", False),
    (DEPOSIT, "Yes, the deposit is returned within 14 days, as long as the apartment is clean and undamaged.", True),
    (DEPOSIT, "Yes, you get the deposit back within 14 days if you leave the apartment clean and undamaged.", True),
    (RENT, "Yes, pets are allowed.", False),
    (RENT, "Pets are allowed if the landlord agrees in writing.", True),
    (RENT, "Tenants have to give a minimum of one month's notice before they move out.", True),
]


# a second set, written after the rules to probe their precision in seven more domains: faithful answers around
# thresholds, kinds and conditions, and five wrong ones (grounded on 35a1470)
LIBRARY = ("Registered members can borrow up to 10 books at a time. Unregistered visitors may read in the reference room. "
           "Books are lent for three weeks and can be renewed online twice.")
HOTEL = ("Guests staying more than 7 nights receive a free airport transfer. Breakfast is served from 7 to 10 in the "
         "main restaurant. Late check-out until 2 pm costs 30 euros.")
CAR = ("If the tyre pressure warning light comes on, check the pressure of all four tyres when they are cold. The "
       "spare wheel is under the boot floor. Vehicles with the winter package have heated front seats.")
UNIVERSITY = ("International students must hold a valid study visa. Domestic students pay a tuition fee of 9,250 pounds a "
              "year. All students can use the library 24 hours a day during exam weeks.")
PHONE = ("The phone is water resistant to a depth of 1.5 metres for up to 30 minutes. Fast charging works with "
         "adapters of 25 W or more. Unlocked phones can be used with any carrier.")
RESTAURANT = ("Dishes marked with a leaf are vegetarian. Children under 10 eat free on Sundays when accompanied by a "
              "paying adult. Tables for more than 8 people must be booked by phone.")
COUNCIL = ("The council approved a plan to plant more than 5,000 trees by 2030. Residents over 70 will get free bus "
           "passes from April. The new library, which cost 12 million pounds, opens in June.")

SECOND = [
    (LIBRARY, "Registered members may borrow as many as 10 books at once.", True),
    (LIBRARY, "Visitors who are not registered can read in the reference room.", True),
    (HOTEL, "If you stay more than 7 nights, the airport transfer is free.", True),
    (HOTEL, "Guests staying 7 nights or more receive a free airport transfer.", False),
    (CAR, "When the tyre pressure warning light comes on, check all four tyres while they are cold.", True),
    (CAR, "Vehicles with the winter package have heated front seats.", True),
    (UNIVERSITY, "International students need a valid study visa.", True),
    (UNIVERSITY, "Students must hold a valid study visa.", False),
    (UNIVERSITY, "All students can use the library around the clock during exam weeks.", True),
    (PHONE, "Fast charging needs an adapter of at least 25 W.", True),
    (PHONE, "Fast charging works with adapters of more than 25 W.", False),
    (PHONE, "The phone can stay under 1.5 metres of water for up to 30 minutes.", True),
    (RESTAURANT, "On Sundays, children under 10 eat free with a paying adult.", True),
    (RESTAURANT, "Children eat free on Sundays when accompanied by a paying adult.", False),
    (RESTAURANT, "Tables for over 8 people have to be booked by phone.", True),
    (COUNCIL, "The council approved a plan to plant over 5,000 trees by 2030.", True),
    (COUNCIL, "Residents over 70 will get free bus passes from April.", True),
    (COUNCIL, "Residents will get free bus passes from April.", False),
]


@pytest.mark.parametrize("document,answer,faithful", BOUNDS + RESTRICTIONS + SECOND)
def test_bounds_and_restrictions(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))
    if not faithful:
        assert [c for claim in result.contradicted_claims for c in claim.conflicts if c.startswith(("bound", "restriction", "condition"))], outcomes(result)


@pytest.mark.parametrize("text,lower,inclusive", [
    ("more than 3 displays", True, False), ("3 displays or more", True, True), ("passengers aged 65 and over", True, True),
    ("at least 18", True, True), ("18+ only", True, True), ("children under 5", False, False), ("5 or younger", False, True),
    ("up to 4 tablets", False, True), ("no more than 20 students", False, True), ("fewer than 4", False, False),
    ("one bag weighing up to 23 kg", False, True), ("ages 12 and up", True, True),
])
def test_a_bound_is_read_with_its_direction_and_edge(text: str, lower: bool, inclusive: bool) -> None:
    (bound,) = bounds(text)
    assert (bound.lower, bound.inclusive, bound.negated) == (lower, inclusive, False)


@pytest.mark.parametrize("text", ["the years leading up to 2016", "paid over 12 months", "up to 24 hours before the visit",
                                  "just over 1,000 points", "reopened in 2024", "5 restaurants and more shops"])
def test_what_is_no_bound(text: str) -> None:
    assert bounds(text) == ()


def test_a_negated_bound_is_marked() -> None:
    (bound,) = bounds("Do not spin the wheels faster than 30 mph for more than 30 seconds.")[-1:]
    assert bound.negated and bound.quantity.value == 30


@pytest.mark.parametrize("claim,restated", [("4 or more displays", True), ("5 or more displays", False), ("at least 3 displays", False)])
def test_the_next_counts_bound_restates_a_count(claim: str, restated: bool) -> None:
    (number,) = quantities(claim)
    assert restated_bound(number, (claim, "Shops with more than 3 displays need a licence.")) is restated
