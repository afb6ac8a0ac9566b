"""Contradictions of order and pairing (issue 21): everything the answer says is in the documents, but attached to the
wrong partner or told in the wrong order.

Hand-made cases of our own in other domains than the blind set that showed the classes (an admissions policy, a
search engine, a company's results, a parish register, a router, purchasing, a club's rules, a biography, a lab protocol, a microscope
slide, a server upgrade, a recipe, a band's history, a museum, a library, a swimming pool, a cooperative's report, a
city budget, a course, a laptop, a hiking trail), each bad one wrong on the code before (grounded), each beside faithful
neighbours that must stay grounded: faithful reorderings of facts, faithful "then" narratives, derived numbers, lists.

- **two items ordered inside one sentence** ("ranked first by X, then by Y"): the words before "first" are what both
  events share, the events are what follows "first" and "then" (scoring/order.py `_event_order`);
- **steps told in the reverse of the documents' sequence** across sentences ("Start by transferring the plasma. Next,
  centrifuge the samples.") or in one claim whose two events stand in two sentences of the documents: only an explicit
  order on both sides counts (the answer's "then", "next", "finally", "before"...; the documents' "Next", "Then",
  "Finally", "First", numbered steps), so that an answer listing facts in its own order is never flagged
  (scoring/order.py `sequence_conflicts`);
- **values trading partners**: two times, or two values dated with two years, each put with the other's partner;
  a relative clause's number is about the part before it ("the reading room, which opens at 10:00"), a part dated
  with another year is about another time (scoring/conflicts.py);
- **a count hyphenated to its noun** ("a 12-week programme", "a six-core processor") is read as a count of that noun,
  so another count of it disagrees; it is never a *missing* number (scoring/quantities.py).
"""

from __future__ import annotations

import pytest

from ragtap.scoring.quantities import agree, quantities
from ragtap.types import Verdict

from test_contradictions import outcomes, score

ADMISSIONS = ("Applicants are ranked first by their written test score, then by their years of relevant experience. "
              "Interviews take place in March.")
SEARCH = "Search results are sorted first by relevance, then by publication date. Up to 50 results are shown per page."
REGISTER = "Entries in the parish register are sorted by surname, then by age."
ROUTER = "Before updating the router firmware, back up the router settings."
QUOTES = "Quotes are compared first by unit price, then by delivery time."
CLUB = "Members can vote after 6 months and stand for the board after 2 years."
PAINTER = "She lived in Lyon before moving to Berlin, and later to Oslo."
SLIDE = ("To prepare the slide, first fix the cells in methanol, then stain them with Giemsa for 20 minutes, and finally "
         "rinse the slide with buffer.")
LAB = ("First, centrifuge the blood samples at 3,000 rpm for 10 minutes. Then transfer the plasma to a labelled cryovial. "
       "Finally, store the cryovials at minus 80 degrees.")
UPGRADE = ("To upgrade the server:\n1. Stop the ingest service with the svc command.\n2. Back up the data directory to "
           "external storage.\n3. Install the new package with the package manager.\n4. Start the ingest service again.")
RECIPE = ("Soak the chickpeas overnight in cold water. Next, drain and rinse them well. Then simmer the chickpeas for 90 "
          "minutes until tender.")
TOUR = "First, the band toured Japan in spring. Then it recorded its second album in Berlin."
BAND = "The Lanterns formed in Leeds in 1998. Their debut album was released in 2001. In 2005 the band moved to London."
MUSEUM = "The museum has a rooftop café with views of the harbour. It was founded in 1921 by a shipping merchant."
LIBRARY = "The reading room opens at 9:30, and the lending desk opens at 10:00."
POOL = "The outdoor pool closes at 7 p.m., while the indoor pool stays open until 10 p.m."
COOPERATIVE = "In 2024 the cooperative had 1,340 members, up from 850 members in 2021."
CITY = "The city spent $2.4 million on cycle lanes in 2022 and $3.1 million in 2023."
SALES = "Revenue rose to 48 million euros in 2023 from 41 million euros in 2022."
COURSE = "The certificate is a 12-module programme with two 3-hour labs a week; the project runs in modules 4–10."
LAPTOP = "The Aero 14 has a 6-core processor, 16 GB of memory and a 3-year warranty; its battery has 4 cells."
TRAIL = "The Ridge Trail is a 3-stage hike with 2 mountain huts along the way; stage 2 is the longest."

# (document, answer, faithful)
ORDER_IN_ONE_SENTENCE = [
    (ADMISSIONS, "Applicants are ranked first by years of relevant experience and then by the written test score.", False),
    (SEARCH, "Results are sorted first by publication date, then by relevance.", False),
    (ADMISSIONS, "Applicants are ranked by their written test score first, then by their years of relevant experience.", True),
    (ADMISSIONS, "Ranking uses the written test score first; years of relevant experience break ties.", True),
    (SEARCH, "Search results are sorted by relevance and then by publication date.", True),
    # what both events share stands before them ("entries ... sorted"), or on both sides of the order ("router")
    (REGISTER, "Entries in the parish register are sorted by age, then by surname.", False),
    (ROUTER, "Update the router firmware before you back up the router settings.", False),
    (REGISTER, "The parish register sorts its entries by surname and then by age.", True),
    (ROUTER, "Back up the router settings before updating the router firmware.", True),
    (QUOTES, "Quotes are compared on unit price first and delivery time second.", True),  # "second" is an order, no number
    (CLUB, "Members may stand for the board after 2 years, and vote after 6 months.", True),  # "after 2 years": a time
    (PAINTER, "She later moved to Berlin and then to Oslo.", True),  # "before moving" does not open its clause
]

STEPS_ACROSS_SENTENCES = [
    (LAB, "Start by transferring the plasma into a labelled cryovial. Next, centrifuge the blood samples at 3,000 rpm for "
          "10 minutes. Finally, store the cryovials at minus 80 degrees.", False),
    (UPGRADE, "Install the new package with the package manager. Then back up the data directory to external storage.", False),
    (RECIPE, "First simmer the chickpeas until tender. Then soak them overnight in cold water.", False),
    (RECIPE, "Simmer the chickpeas until tender, before you soak them overnight in cold water.", False),  # one claim, two sentences
    (SLIDE, "First stain the cells with Giemsa for 20 minutes. Then fix them in methanol, and finally rinse the slide with "
            "buffer.", False),  # a claim of two steps: the step right after "Then" is the one ordered
    (SLIDE, "Fix the cells in methanol first. Then stain them with Giemsa for 20 minutes and finally rinse the slide with "
            "buffer.", True),
    # the documents' order, told in other words
    (LAB, "First spin the blood samples at 3,000 rpm for 10 minutes. After that, move the plasma into a labelled cryovial. "
          "Lastly, keep the cryovials at minus 80 degrees.", True),
    (UPGRADE, "Stop the ingest service, then back up the data directory to external storage. After that, install the new "
              "package and start the ingest service again.", True),
    (RECIPE, "Soak the chickpeas overnight in cold water before you simmer them for 90 minutes.", True),
    (RECIPE, "After draining and rinsing the chickpeas, simmer them for 90 minutes until tender.", True),
    # facts listed in another order than the documents', without an order word: no order is claimed
    (LAB, "The cryovials are stored at minus 80 degrees. The blood samples are centrifuged at 3,000 rpm for 10 minutes, "
          "and the plasma goes into a labelled cryovial.", True),
    (TOUR, "The band recorded its second album in Berlin. Then it toured Japan in spring.", False),
    (TOUR, "The band recorded its second album in Berlin. Then again, it had toured Japan in spring before that.", True),
    # a faithful "then" narrative
    (BAND, "The Lanterns formed in Leeds in 1998. Then they released their debut album in 2001. Finally, in 2005, they "
           "moved to London.", True),
    # an answer's "then" against documents that mark no sequence: nothing to contradict
    (MUSEUM, "The museum was founded in 1921 by a shipping merchant. Then it opened a rooftop café with views of the harbour.", True),
]

VALUES_TRADING_PARTNERS = [
    (LIBRARY, "The lending desk opens at 9:30, half an hour before the reading room, which opens at 10:00.", False),
    (COOPERATIVE, "The cooperative had 850 members in 2024.", False),
    (CITY, "In 2023 the city spent $2.4 million on cycle lanes.", False),
    (SALES, "Revenue rose to 41 million euros in 2023.", False),  # one part, each number dated by the year right after it
    (SALES, "Revenue was 41 million euros in 2022 and 48 million euros in 2023.", True),
    (LIBRARY, "The reading room opens at 9:30, half an hour before the lending desk, which opens at 10:00.", True),
    (COOPERATIVE, "The cooperative grew from 850 members in 2021 to 1,340 members in 2024.", True),
    (COOPERATIVE, "In 2021 the cooperative had 850 members.", True),
    (COOPERATIVE, "The cooperative had 490 more members in 2024 than in 2021.", True),  # a derived number
    (CITY, "The city spent $3.1 million on cycle lanes in 2023, up from $2.4 million in 2022.", True),
    (POOL, "The indoor pool stays open until 10 p.m., three hours after the outdoor pool, which closes at 7 p.m.", True),
]

HYPHENATED_COUNTS = [
    (COURSE, "The certificate is a 10-module programme.", False),  # 10 is the project's last module
    (LAPTOP, "The Aero 14 has a 4-core processor.", False),  # 4 is the battery's cells
    (TRAIL, "The Ridge Trail is a 2-stage hike.", False),  # 2 is the huts', or stage 2
    (COURSE, "The programme has twelve modules, with two three-hour labs each week.", True),
    (COURSE, "It is a 12-module programme; the project runs from module 4 to module 10.", True),
    (LAPTOP, "It has a six-core processor, 16 GB of memory and a three-year warranty.", True),  # a list, in words
    (TRAIL, "The hike has three stages, with two mountain huts on the way.", True),
]


def _check(embedder, document: str, answer: str, faithful: bool) -> None:  # type: ignore[no-untyped-def]
    result = score(embedder, document, answer)
    if faithful:
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    else:
        assert result.contradicted_claims, (result.verdict, outcomes(result))


@pytest.mark.parametrize("document,answer,faithful", ORDER_IN_ONE_SENTENCE)
def test_two_items_ordered_in_one_sentence(embedder, document: str, answer: str, faithful: bool) -> None:  # type: ignore[no-untyped-def]
    _check(embedder, document, answer, faithful)


@pytest.mark.parametrize("document,answer,faithful", STEPS_ACROSS_SENTENCES)
def test_steps_against_the_documents_sequence(embedder, document: str, answer: str, faithful: bool) -> None:  # type: ignore[no-untyped-def]
    _check(embedder, document, answer, faithful)


@pytest.mark.parametrize("document,answer,faithful", VALUES_TRADING_PARTNERS)
def test_values_trading_partners(embedder, document: str, answer: str, faithful: bool) -> None:  # type: ignore[no-untyped-def]
    _check(embedder, document, answer, faithful)


@pytest.mark.parametrize("document,answer,faithful", HYPHENATED_COUNTS)
def test_a_count_hyphenated_to_its_noun(embedder, document: str, answer: str, faithful: bool) -> None:  # type: ignore[no-untyped-def]
    _check(embedder, document, answer, faithful)


def test_the_contradicted_step_is_the_one_whose_order_word_is_wrong(embedder) -> None:  # type: ignore[no-untyped-def]
    result = score(embedder, LAB, STEPS_ACROSS_SENTENCES[0][1])
    (claim,) = result.contradicted_claims
    assert claim.text.startswith("Next, centrifuge")
    assert claim.conflicts == ('order: the documents do "First, centrifuge the blood samples at 3,000 rpm for 10 m..." before '
                               '"Then transfer the plasma to a labelled cryovial."',)


def test_hyphenated_counts_are_read_as_counts_of_their_noun() -> None:
    found = [(q.describe(), q.loose) for q in quantities("a 7-round event, a seven-round event, a 4-door car, 2-for-1, "
                                                         "fifty-five members, two-thirds of them, a 26-point lead")]
    assert found == [("7 round", True), ("7 round", True), ("4 door", True), ("55 member", False),
                     ("26 point", True)]
    seven, five = quantities("a 7-round event"), quantities("a 5-round event")
    assert agree(five[0], seven[0]) is False
    # a compound counts its noun only: a "26-point lead" is no score of "38-26"
    assert agree(quantities("won 38-26")[1], quantities("a 26-point lead")[0]) is None
