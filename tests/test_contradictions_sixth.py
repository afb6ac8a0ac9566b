"""Contradictions and precision, sixth round (issue 21): classes found by a blind hand-made set, tested on cases of our own.

The sixth set (`SIXTH_SET`, 55 cases in 8 domains: hotel rules, a syllabus, a lab safety sheet, a tax guide, a trail
guide, a museum page, a fact sheet about Mars, an earnings note) was written by someone who had not read the rules,
and run once before any change: 32 of 55 right.  Its misses that were classes were fixed as classes; each class has
cases here in other domains (`CLASSES`, each wrong on the code before) with faithful neighbours that must stay
grounded.  A seventh blind set, written afterwards in 8 other domains, scored 39 of 56 before this round and 38 after
it: it showed what the round's own changes broke (a negation read against the wrong clause once "paid" became "pay", a
weekday taken for a name, a bare count not worked out) or had caught only by accident (an order told with "then"); the
cases after BANK cover those, and it scores 43 of 56 with them (no longer blind).  The misses left are listed (`SIXTH_SET_MISSES`): a listed case that comes right must leave the list.
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
# Written after the seventh blind set showed what this round's own changes broke or left (see the module's docstring).
BANK = ("The Premium account has a monthly fee of 5 euros, which is waived if at least 1,000 euros are paid in each month. "
        "Account holders under 18 pay no monthly fee.")
WORKSHOP = ("Dr. Lena Park runs the writing workshop on Mondays, while tutor Sam Reid marks the essays on Fridays. Each shuttle "
            "bus seats up to 40 passengers; larger groups need a second bus.")
PUMP = "To replace the filter, turn off the pump and then open the lid. Replace the filter when the light turns red."
CLUB = ("The stadium opened in 1916; the club was founded five years later. About a third of the club's budget goes to "
        "salaries.")
# Written after the eighth blind set (see the module's docstring).
COUNCIL = ("The budget includes 2 million euros for new cycle lanes, but a proposal to build a new ice rink was rejected. "
           "From November to February there are two sailings per week, and no sailings run on public holidays. "
           "Withdrawals from Harbor Bank machines are free; other machines charge 2 dollars.")
LAKES = ("Lake Vorn reaches a depth of 84 metres. Lake Ashby, further north, is 112 metres deep. The Arrow bike weighs "
         "9.2 kg. The Comet bike weighs 11.5 kg. Riverside school has 420 pupils. Hillcrest school has 380 pupils.")
MOTION = "Councillor Ana Ruiz proposed the motion and Councillor Tom Berg seconded it."
FEES = ("A 30-euro sign-up fee is charged unless you join during an open week. Parking fees rise by 2 euros from May, "
        "except for residents with a permit.")
SKI = "Children under 6 ski free when accompanied by an adult with a paid pass."
TYRES = "Check the valves first, then inflate the tyres to 6 bar for racing bikes or 3 bar for mountain bikes."
GRANT = "The research grant pays up to 6,000 pounds a year for three years."
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
    # a negation the claim shares with another clause of the window than the one that holds most of its words
    (BANK, "No. Account holders under 18 don't pay the monthly fee on the Premium account.", True),
    (BANK, "Account holders under 18 pay the monthly fee of 5 euros.", False),
    # a title's dot ends no sentence, and a weekday names no one: the name moved into the subject's place is seen
    (WORKSHOP, "Tutor Sam Reid runs the writing workshop on Mondays.", False),
    (WORKSHOP, "Sam Reid marks the essays on Fridays.", True),
    # "A, then B" is an order; "if A, then B" is not
    (PUMP, "Open the lid, then turn off the pump.", False),
    (PUMP, "Turn off the pump first, then open the lid.", True),
    (PUMP, "If the light turns red, then replace the filter.", True),
    # a year worked out from a year and a span; no unit read across a dash or a comma; shares told in words
    (CLUB, "The club was founded in 1921 — five years after the stadium opened in 1916.", True),
    (CLUB, "The club was founded in 1926, ten years after the stadium opened.", False),
    (CLUB, "Roughly 33% of the club's budget is spent on salaries.", True),
    (CLUB, "Not really — only about a third of the club's budget goes to salaries.", True),
    (CLUB, "About half of the club's budget goes to salaries.", False),
    # an opposite a few words from what both say ("approved [plans for a new] ice rink"), in a sentence whose
    # clauses the claim joins; "sailings" is "sailing"; "non-Harbor" is other than Harbor, not its opposite
    (COUNCIL, "The council approved plans for a new ice rink as part of the budget.", False),
    (COUNCIL, "The plan for a new ice rink was rejected, while the budget pays for new cycle lanes.", True),
    (COUNCIL, "Sailings run on public holidays.", False),
    (COUNCIL, "There are no sailings on public holidays.", True),
    (COUNCIL, "Withdrawals at non-Harbor Bank machines cost 2 dollars, while Harbor Bank machines are free.", True),
    # a comparison against the values the documents give each side (no sentence states it)
    (LAKES, "Lake Vorn is deeper than Lake Ashby.", False),
    (LAKES, "Lake Ashby is deeper than Lake Vorn, by 28 metres.", True),
    (LAKES, "The Arrow is heavier than the Comet.", False),
    (LAKES, "The Comet bike is heavier than the Arrow bike.", True),
    (LAKES, "Hillcrest school has more pupils than Riverside school.", False),
    (LAKES, "Riverside school has 40 more pupils than Hillcrest school.", True),
    # two names of several words trading places
    (MOTION, "Councillor Tom Berg proposed the motion and Councillor Ana Ruiz seconded it.", False),
    (MOTION, "The motion was proposed by Councillor Ana Ruiz and seconded by Councillor Tom Berg.", True),
    # a condition or an exception turned around ("unless" is "if not"; "except for" against "only for")
    (FEES, "The 30-euro sign-up fee is only charged if you join during an open week.", False),
    (FEES, "You pay the 30-euro sign-up fee unless you join during an open week.", True),
    (FEES, "If you join during an open week, there is no sign-up fee.", True),
    (FEES, "Parking fees rise by 2 euros from May, but only for residents with a permit.", False),
    (FEES, "From May parking costs 2 euros more, except for residents who have a permit.", True),
    # "No —" answers the question, as "No," and "No." do
    (SKI, "No — children under 6 ski free, as long as they are with an adult who has a paid pass.", True),
    (SKI, "No — children under 6 do not ski free.", False),
    # a number the claim gives a qualifier that another part of the sentence gives another value ("For mountain bikes")
    (TYRES, "For mountain bikes, inflate the tyres to 6 bar.", False),
    (TYRES, "For racing bikes, inflate the tyres to 6 bar.", True),
    (TYRES, "Inflate the tyres to 6 bar on a racing bike and to 3 bar on a mountain bike.", True),
    # a value given per unit of time, times a span of that unit
    (GRANT, "Over the three years the grant pays up to 18,000 pounds in total.", True),
    (GRANT, "Over the three years the grant pays up to 24,000 pounds in total.", False),
    # "past the deadline" is "after" it; a deferral after an answer does not make it a refusal
    (RESTAURANT, "No. Claims more than 30 days past the visit won't be accepted, and even within those 30 days you need the receipt.", True),
    (RESTAURANT, "Yes, you can book a table for up to 8 people online, though it depends on availability.", True),
]


@pytest.mark.parametrize("document,answer,faithful", CLASSES)
def test_sixth_round_classes(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))


@pytest.mark.parametrize("remaining,faithful", [(15, True), (25, False)])
def test_a_bare_count_worked_out_from_the_claims_own_values(embedder, remaining: int, faithful: bool) -> None:
    answer = f"No. One bus seats at most 40 passengers, so with 55 passengers you need a second bus for the remaining {remaining}."
    result = score(embedder, WORKSHOP, answer, question="We are 55 passengers: does one shuttle bus do?")
    assert (result.verdict is Verdict.GROUNDED) == faithful, (result.verdict, outcomes(result))


def test_an_answer_that_only_defers_is_still_a_refusal(embedder) -> None:
    result = score(embedder, RESTAURANT, "It depends on the restaurant.", question="Can I book a table for 10 people online?")
    assert result.verdict is Verdict.REFUSAL, outcomes(result)


# ------------------------------------------------------------------------------------------ the sixth set, as written
# 1. Hotel house rules
SIX_HOTEL = ("Guests at the Harbourview Hotel may check in from 3 p.m. and must check out by 11 a.m. "
             "Late check-out until 1 p.m. is available for a fee of 25 euros, subject to availability. "
             "Pets are not permitted in guest rooms, except registered assistance dogs. "
             "Quiet hours run from 10 p.m. to 7 a.m., and the rooftop terrace closes at 10 p.m. "
             "Smoking is prohibited throughout the building; a cleaning charge of 150 euros applies to any violation. "
             "Breakfast is served in the Marina Room from 6:30 to 10:30 a.m. on weekdays and until 11 a.m. on weekends.")

# 2. University course syllabus
SIX_SYL = ("STAT 2140 Introduction to Statistical Methods is taught by Dr. Priya Raman; tutorials are led by teaching assistant Tomás Ortega. "
           "The final grade consists of two midterm exams worth 20% each, weekly problem sets worth 25%, and a cumulative final exam worth 35%. "
           "Students must attend at least 80% of tutorials to be admitted to the final exam. "
           "Late problem sets lose 10% per day and are not accepted more than three days after the deadline. "
           "The first midterm is held on October 9 and the second on November 13. "
           "Dr. Raman's office hours are on Tuesdays from 2 to 4 p.m. in Room 318.")

# 3. Chemistry lab safety sheet
SIX_LAB = ("Concentrated sulfuric acid must always be added slowly to water, never water to acid, because the reaction releases a large amount of heat. "
           "Work with the acid only inside a fume hood, wearing splash goggles, a lab coat and nitrile gloves. "
           "In case of skin contact, remove contaminated clothing and rinse the affected area with running water for at least 15 minutes before seeking medical attention. "
           "Spills smaller than 100 mL may be neutralised with sodium bicarbonate by trained staff; larger spills require evacuating the lab and calling the safety officer, Dr. Helen Marsh, on extension 4471. "
           "Store the acid below 25 °C, away from bases and metals, in its original container.")

# 4. Tax filing guide
SIX_TAX = ("Individual income tax returns for the 2023 tax year must be filed by April 15, 2024. "
           "Taxpayers who cannot meet the deadline may request an automatic six-month extension by filing Form 4868, but the extension applies only to filing, not to payment: any tax owed is still due on April 15. "
           "The standard deduction for a single filer is $13,850, and $27,700 for married couples filing jointly. "
           "Taxpayers aged 65 or older may claim an additional $1,850 if single. "
           "Interest on late payments accrues daily from the original due date, and a failure-to-file penalty of 5% of the unpaid tax per month applies, up to a maximum of 25%.")

# 5. Hiking trail guide
SIX_HIKE = ("The Ridgeback Trail is a 14 km loop that starts and ends at the Pine Hollow car park and climbs 850 metres to the summit of Mount Carrow. "
            "Most hikers take six to seven hours to complete it. "
            "The first 4 km follow the river through forest; after the wooden footbridge, the path turns steeply uphill over loose scree. "
            "Dogs are allowed on the trail but must be kept on a lead between April and July because of ground-nesting birds. "
            "The summit section is not recommended in winter unless hikers carry crampons and an ice axe. "
            "There is no drinking water on the route, so carry at least two litres per person.")

# 6. Museum opening hours / admission page
SIX_MUS = ("The Valdris Museum of Natural History is open Tuesday to Sunday from 10 a.m. to 6 p.m., and until 9 p.m. on Thursdays. "
           "It is closed on Mondays, except on public holidays, and on December 25. "
           "Admission is 18 dollars for adults and 12 dollars for students and seniors; children under 12 enter free. "
           "On the first Sunday of each month, admission is free for all visitors. "
           "The dinosaur hall reopened in March 2023 after a two-year renovation, and its centrepiece is a 27-metre skeleton of an Argentinosaurus. "
           "Large bags and backpacks must be left in the cloakroom, which is free of charge.")

# 7. Astronomy fact sheet
SIX_AST = ("Mars is the fourth planet from the Sun and has two small moons, Phobos and Deimos. "
           "Phobos is the larger of the two and orbits closer to the planet, completing an orbit in about 7.7 hours, while Deimos takes about 30 hours. "
           "A Martian day, or sol, lasts 24 hours and 37 minutes, and a Martian year is 687 Earth days. "
           "The planet's surface gravity is about 38% of Earth's. "
           "Olympus Mons, the tallest volcano in the Solar System, rises about 22 km above the surrounding plains, nearly three times the height of Mount Everest. "
           "Mars has no global magnetic field, and its thin atmosphere is about 95% carbon dioxide.")

# 8. Company earnings note
SIX_EARN = ("Northwind Logistics reported third-quarter revenue of 412 million euros, up 8% from the same quarter last year, driven mainly by its freight forwarding division. "
            "Operating margin fell to 6.1% from 7.4%, as higher fuel costs outweighed price increases. "
            "Chief Executive Laura Benning said the company would not raise its dividend this year but would continue its share buyback programme of 50 million euros. "
            "Chief Financial Officer Marc Oyelaran lowered the full-year profit guidance to between 95 and 105 million euros. "
            "The contract logistics division was the only segment to report a decline in revenue, falling 3%. "
            "The company will publish fourth-quarter results on February 20.")

SIXTH_SET = [
 # --- hotel ---
 (SIX_HOTEL, "What time do I have to check out?", "You need to check out of your room by 1 p.m.", "bad"),  # number from elsewhere (late check-out)
 (SIX_HOTEL, "Can I bring my dog to the hotel?", "Yes, pets are welcome in the guest rooms at the Harbourview.", "bad"),  # negation flipped
 (SIX_HOTEL, "Can I bring my dog to the hotel?", "Unfortunately not — pets aren't allowed in the guest rooms. The only exception is registered assistance dogs.", "good"),
 (SIX_HOTEL, "What happens if I smoke in my room?", "Smoking isn't allowed anywhere in the hotel. If you do smoke, you'll be billed a cleaning charge of 150 euros. Repeat violations lead to immediate eviction without a refund.", "bad"),  # invented detail, multi
 (SIX_HOTEL, "When is breakfast served on Saturday?", "Breakfast is served in the Marina Room. On weekends it runs from 6:30 until 10:30 a.m.", "bad"),  # number from elsewhere (weekday end), multi
 (SIX_HOTEL, "Until when can I get breakfast on a Sunday?", "On weekends, breakfast in the Marina Room goes on until 11 a.m., half an hour longer than on weekdays.", "good"),
 (SIX_HOTEL, "Is it possible to stay in the room a bit longer on my last day?", "Yes, you can ask for a late check-out until 1 p.m. for a fee of 25 euros, though it depends on availability.", "good"),

 # --- syllabus ---
 (SIX_SYL, "How is the grade for STAT 2140 calculated?", "Your grade is made up of two midterms at 20% apiece, weekly problem sets at 25%, and a cumulative final worth 35%. Together the midterms account for 40% of the grade.", "good"),
 (SIX_SYL, "Who teaches the course and who runs the tutorials?", "The course is taught by Tomás Ortega, and Dr. Priya Raman leads the tutorials.", "bad"),  # roles swapped
 (SIX_SYL, "How many tutorials do I need to attend to take the final?", "You need to attend all of the tutorials to be admitted to the final exam.", "bad"),  # quantifier at least 80% -> all
 (SIX_SYL, "What's the late policy for problem sets?", "Late problem sets lose 10% for each day they're late. After three days they're no longer accepted. Extensions can be requested by emailing the TA at least 24 hours before the deadline.", "bad"),  # invented detail, multi
 (SIX_SYL, "Can I hand in a problem set five days late?", "No. Problem sets more than three days past the deadline won't be accepted, and even within those three days you lose 10% for each day late.", "good"),
 (SIX_SYL, "When is the second midterm?", "There are two midterm exams, each counting for 20% of the grade. The second one takes place on October 9.", "bad"),  # date from elsewhere, multi
 (SIX_SYL, "When can I meet the professor?", "Dr. Raman holds office hours every Tuesday between 2 and 4 p.m. in Room 318.", "good"),

 # --- lab safety ---
 (SIX_LAB, "How do I dilute concentrated sulfuric acid?", "Slowly add water to the acid, never the acid to the water, since the mixing gives off a lot of heat.", "bad"),  # roles swapped / order
 (SIX_LAB, "What's the right way to dilute concentrated sulfuric acid?", "Always pour the acid slowly into the water rather than the other way round — mixing them produces a lot of heat.", "good"),
 (SIX_LAB, "What should I do if I get sulfuric acid on my skin?", "First rinse the affected skin under running water for at least 15 minutes, and only after that take off any contaminated clothing. Then get medical attention.", "bad"),  # order of steps reversed, multi
 (SIX_LAB, "Can I clean up a small acid spill myself?", "If you're trained, yes: spills larger than 100 mL can be neutralised with sodium bicarbonate.", "bad"),  # comparative flipped
 (SIX_LAB, "Who do I call if a lot of acid is spilled?", "Evacuate the lab and call the safety officer, Dr. Helen Marsh, on extension 4417.", "bad"),  # invented number (digits transposed)
 (SIX_LAB, "What protective equipment do I need when handling the acid?", "You should wear splash goggles, a lab coat and nitrile gloves, and only handle the acid inside a fume hood.", "good"),
 (SIX_LAB, "How should the acid be stored?", "Keep it in its original container at under 25 °C (77 °F), and away from bases and metals.", "good"),

 # --- tax ---
 (SIX_TAX, "If I file for an extension, do I also get more time to pay?", "You can get an automatic six-month extension by submitting Form 4868. The extension covers payment as well, so you won't owe anything until the extended deadline.", "bad"),  # negation dropped, multi
 (SIX_TAX, "If I file for an extension, do I also get more time to pay?", "No. Form 4868 gives you an automatic six-month extension to file, but it doesn't extend the time to pay — any tax you owe is still due on April 15.", "good"),
 (SIX_TAX, "What's the standard deduction for a married couple filing together?", "According to the guide, married couples filing jointly get a standard deduction of $27,700, exactly twice the $13,850 for a single filer.", "good"),
 (SIX_TAX, "How high can the failure-to-file penalty get?", "The penalty is 5% of the unpaid tax per month, with a minimum of 25%.", "bad"),  # quantifier maximum -> minimum
 (SIX_TAX, "I'm 67 and single — do I get anything extra?", "Yes. Because you're 65 or older and filing single, you can claim an additional $1,850 on top of the standard deduction. That brings your total to $15,700. You may also qualify for free filing help through a volunteer assistance program.", "bad"),  # invented detail, multi
 (SIX_TAX, "How is interest charged if I pay late?", "Interest on a late payment is charged monthly, starting from the original due date of April 15.", "bad"),  # daily -> monthly (word from elsewhere)

 # --- hiking ---
 (SIX_HIKE, "How long is the Ridgeback Trail?", "It's a 14 km (roughly 8.7 miles) loop that starts and finishes at the Pine Hollow car park.", "good"),
 (SIX_HIKE, "How long does the hike usually take?", "Most hikers need about four hours to complete the loop.", "bad"),  # number from elsewhere (4 km)
 (SIX_HIKE, "What's the route like?", "The trail is a loop from the Pine Hollow car park. It begins with a steep climb over loose scree, and after the wooden footbridge it follows the river through the forest. The trail eventually reaches the summit of Mount Carrow, 850 metres above the start.", "bad"),  # order reversed, multi
 (SIX_HIKE, "Are dogs allowed on the trail?", "Dogs are banned from the trail between April and July because of ground-nesting birds.", "bad"),  # contradiction (allowed on lead -> banned)
 (SIX_HIKE, "Can I bring my dog in May?", "Yes, dogs are welcome, but from April through July — so in May as well — they have to stay on a lead to protect ground-nesting birds.", "good"),
 (SIX_HIKE, "Can I hike to the summit in winter?", "Only if you're properly equipped: the guide advises against the summit section in winter unless you have crampons and an ice axe with you.", "good"),
 (SIX_HIKE, "Is there water along the way?", "No, there's no drinking water on the route, so bring at least two litres per person. You can refill your bottles at the kiosk in the Pine Hollow car park.", "bad"),  # invented detail, multi

 # --- museum ---
 (SIX_MUS, "Is the museum open on Thursday evening?", "Yes — on Thursdays the museum stays open late, until 9 p.m., instead of closing at 6.", "good"),
 (SIX_MUS, "Can I visit on a Monday?", "The museum is normally closed on Mondays. This also applies to public holidays, so a holiday Monday is closed too.", "bad"),  # exception inverted, multi
 (SIX_MUS, "Do kids get in for free?", "Yes, admission is free for all children.", "bad"),  # quantifier (under 12 -> all)
 (SIX_MUS, "Tell me about the dinosaur hall.", "The dinosaur hall reopened in March 2023 after being renovated for two years. Its highlight is a 27-metre Argentinosaurus skeleton, which was discovered in Patagonia in 1987.", "bad"),  # invented detail, multi
 (SIX_MUS, "When did the dinosaur hall reopen?", "The dinosaur hall reopened in December 2023 following a two-year renovation.", "bad"),  # month from elsewhere
 (SIX_MUS, "Is there ever a free day?", "Yes. On the first Sunday of every month, everyone gets in free. Otherwise, children under 12 are always free.", "good"),
 (SIX_MUS, "Can I take my backpack into the galleries?", "No, backpacks and large bags have to be left in the cloakroom, but it doesn't cost anything.", "good"),

 # --- astronomy ---
 (SIX_AST, "Which Martian moon is closer to Mars?", "Deimos orbits closer to Mars and is the larger of its two moons.", "bad"),  # name swap
 (SIX_AST, "How long is a day on Mars?", "A Martian day, called a sol, is a little longer than ours — about 24 hours and 37 minutes.", "good"),
 (SIX_AST, "Tell me about the moons of Mars.", "Mars has two small moons, Phobos and Deimos. Phobos is the bigger one and circles the planet in under 8 hours, while Deimos needs roughly 30 hours.", "good"),
 (SIX_AST, "Does Mars have a magnetic field?", "Yes, Mars has a global magnetic field. Its atmosphere, by contrast, is thin and consists mostly of carbon dioxide.", "bad"),  # negation flipped, multi
 (SIX_AST, "How tall is Olympus Mons?", "Olympus Mons stands around 22 km above the surrounding plains, almost twice as tall as Mount Everest.", "bad"),  # comparative number changed (three times -> twice)
 (SIX_AST, "How long is a year on Mars?", "One Martian year lasts 687 Earth days, which is nearly two Earth years.", "good"),
 (SIX_AST, "What is the Martian atmosphere made of?", "The Martian atmosphere is thin and consists of about 95% carbon dioxide. Most of the remainder is nitrogen and argon.", "bad"),  # invented detail, multi

 # --- earnings ---
 (SIX_EARN, "How much did revenue grow in the third quarter?", "Revenue rose 3% year on year to 412 million euros.", "bad"),  # number from elsewhere
 (SIX_EARN, "How did Northwind's margins develop?", "Northwind's third-quarter revenue came in at 412 million euros, 8% higher than a year earlier. Operating margin improved from 6.1% to 7.4%.", "bad"),  # direction swapped, multi
 (SIX_EARN, "Who cut the profit guidance?", "CEO Laura Benning lowered the full-year profit guidance to between 95 and 105 million euros.", "bad"),  # name swap
 (SIX_EARN, "Is Northwind raising its dividend?", "No. CEO Laura Benning said the dividend won't be raised this year, although the 50-million-euro share buyback will continue.", "good"),
 (SIX_EARN, "Which segments saw revenue decline?", "The contract logistics division was one of several segments with falling revenue, down 3%.", "bad"),  # quantifier only -> several
 (SIX_EARN, "When are the next results due?", "Northwind will release its fourth-quarter figures on February 20.", "good"),
 (SIX_EARN, "Can you summarise the quarter?", "Northwind grew third-quarter revenue by 8% to 412 million euros, mostly thanks to freight forwarding. Margins shrank, though: operating margin slipped to 6.1% from 7.4% because higher fuel costs more than offset price rises. The CFO also trimmed the full-year profit outlook to 95–105 million euros.", "good"),
]

SIXTH_SET_MISSES = {
    "Breakfast is served in the Marina Room. On weekends it runs from 6:30 until 10:30 a.m.",  # "it": one word reaches the evidence
    "The course is taught by Tomás Ortega, and Dr. Priya Raman leads the tutorials.",  # two names trading roles
    "Slowly add water to the acid, never the acid to the water, since the mixing gives off a lot of heat.",  # a direction reversed
    "You can get an automatic six-month extension by submitting Form 4868. The extension covers payment as well, so you won't owe anything until the extended deadline.",
    "No, there's no drinking water on the route, so bring at least two litres per person. You can refill your bottles at the kiosk in the Pine Hollow car park.",
    'First rinse the affected skin under running water for at least 15 minutes, and only after that take off any contaminated clothing. Then get medical attention.',  # an order told without before/after/then
    'The trail is a loop from the Pine Hollow car park. It begins with a steep climb over loose scree, and after the wooden footbridge it follows the river through the forest. The trail eventually reaches the summit of Mount Carrow, 850 metres above the start.',  # an order told without before/after/then
    "The museum is normally closed on Mondays. This also applies to public holidays, so a holiday Monday is closed too.",  # an exception inverted
}


@pytest.mark.parametrize("document,question,answer,want", SIXTH_SET)
def test_sixth_set(embedder, document: str, question: str, answer: str, want: str) -> None:
    result = score(embedder, document, answer, question=question)
    right = (result.verdict is not Verdict.GROUNDED) == (want == "bad")
    assert right != (answer in SIXTH_SET_MISSES), (result.verdict, outcomes(result))  # a listed miss that comes right leaves the list
