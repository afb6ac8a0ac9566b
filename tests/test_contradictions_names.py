"""Contradictions (issue 21): a name taken from elsewhere in the same documents.

A claim that keeps every word of its evidence sentence but puts another name of the documents where that sentence
names someone or something else ("The library was created by Omar Haddad" where Kira Tanaka created it and Omar
Haddad maintains the documentation) passed every check before: the name is in the documents, so it is not missing,
and it is not the sentence's subject moved.  Hand-made cases of our own in fourteen domains (a football club, a
software project, a museum, a rail journey, clinics, a logistics company, a town council, an orchestra, a school, a
trial, a medical study, a flood, a warehouse fire, an observatory), scored through the real scoring path; each bad case came back
grounded on the code before this check.  Beside them the
faithful neighbours a summary writes all the time: two sentences merged into one claim (naming both names), a name
in apposition, a name in a list, "X, not Y", a name that is the referent of the evidence's pronoun.
"""

from __future__ import annotations

import pytest

from ragtap.types import Verdict

from test_contradictions import outcomes, score

CLUB = ("Ravensdale FC signed striker Jonas Berg from Malmö FF in July. Goalkeeper Pieter Alders left the club for FC "
        "Utrecht in August. The team is coached by Ilse Vermeer, who took over in 2022.")
SOFTWARE = ("The Lumen image library was created by Kira Tanaka in 2016. Its documentation is maintained by Omar Haddad, "
            "and new releases are published on PyPI every quarter.")
MUSEUM = ("The portrait of the merchant's wife was painted by Clara Voss in 1891 and bought by the Hallberg Museum in "
          "1950. The harbour scene that hangs beside it, painted by her rival Edmund Krantz, is a loan from the Nordic "
          "Art Trust.")
RAIL = ("The night train to Venice leaves Vienna at 21:40 and arrives at 08:30. A connecting bus runs from Venice to "
        "Trieste twice a day. Tickets for both are sold by Railjet Travel.")
CLINICS = ("The vaccination clinic at St Mary's Hospital opens on Mondays and Thursdays from 9 a.m. The walk-in clinic at "
           "Riverside Health Centre opens on Saturdays. Appointments for both are booked through the Healthline app.")
LOGISTICS = ("Northwind Logistics acquired the Dutch parcel carrier Velotrans in 2019. A year later its rival Eastline "
             "bought the freight broker Cargomax. Northwind Logistics is led by chief executive Sara Lind.")
COUNCIL = ("Mayor Ingrid Solberg was re-elected in May with a clear majority. Her deputy, Karl Evensen, resigned in June "
           "and was replaced by Nora Dahl.")
ORCHESTRA = ("The orchestra's youth programme is run by Priya Nair. Principal conductor Anton Weiss retired in March "
             "and was succeeded by Lena Hoff.")
SCHOOL = ("Headteacher Ruth Okoye left the school in July and was replaced by Daniel Frost. The board of governors is "
          "chaired by Alan Price.")
TRIAL = ("The trial of former mayor Victor Lang opened in Kingsport on Monday. Prosecutor Dana Webb told the jury that Lang "
         "accepted bribes from the developer Orrin Homes. Lang's lawyer, Samuel Ortiz, said his client was innocent.")
STUDY = ("The study, led by Dr. Mei Chen at Lindholm University, followed 2,000 adults for ten years. Co-author Jonas "
         "Petersen, of the Oslo Institute of Public Health, said the results surprised the team.")
FLOOD = ("Flooding closed the high street in Maidstone on Sunday. Kent Police advised drivers to avoid the town. The "
         "river Medway burst its banks at Wyebridge, where residents were told to expect more flooding.")
WAREHOUSE = ("A fire destroyed a warehouse in Bridgeton on Tuesday night. Kell Foods chief executive Mark Dunn thanked "
             "the crews from Ashford, who arrived within minutes.")
OBSERVATORY = ("Comet Hasegawa was discovered by the amateur astronomer Yuki Sato at the Kiso Observatory in 2011. Its "
               "orbit was later calculated by Pablo Ruiz at the Calar Alto Observatory.")

# (document, answer, faithful)
CASES = [
    # a name from another sentence in the place of the evidence's own: "signed X", "by X", "to X", "at X", "for X"
    (CLUB, "Ravensdale FC signed striker Pieter Alders from Malmö FF in July.", False),
    (CLUB, "Goalkeeper Pieter Alders left the club for Malmö FF in August.", False),
    (SOFTWARE, "The Lumen image library was created by Omar Haddad in 2016.", False),
    (MUSEUM, "The portrait of the merchant's wife was painted by Edmund Krantz in 1891.", False),
    (MUSEUM, "The portrait was painted by Clara Voss in 1891 and bought by the Nordic Art Trust in 1950.", False),
    (RAIL, "The night train to Trieste leaves Vienna at 21:40 and arrives at 08:30.", False),
    (CLINICS, "The vaccination clinic at Riverside Health Centre opens on Mondays and Thursdays from 9 a.m.", False),
    (LOGISTICS, "Northwind Logistics acquired the Dutch parcel carrier Cargomax in 2019.", False),
    (COUNCIL, "Her deputy Karl Evensen resigned in June and was replaced by Ingrid Solberg.", False),
    (OBSERVATORY, "Comet Hasegawa was discovered by the amateur astronomer Pablo Ruiz at the Kiso Observatory in 2011.", False),
    # a successor taken from elsewhere: the relation is the slot, whatever words tell the role
    (ORCHESTRA, "Priya Nair became principal conductor in March, succeeding Anton Weiss.", False),
    (SCHOOL, "Alan Price replaced Ruth Okoye as headteacher in July.", False),
    (SCHOOL, "Ruth Okoye left the school in July and was replaced by Alan Price.", False),
    (ORCHESTRA, "Lena Hoff succeeded Anton Weiss as principal conductor in March.", True),
    (SCHOOL, "Daniel Frost took over from Ruth Okoye as headteacher in July; Alan Price chairs the governors.", True),
    (ORCHESTRA, "Anton Weiss retired in March, and Priya Nair runs the youth programme.", True),
    # a name in apposition has the noun it names for its slot; a title's dot ends no sentence ("Dr. Mei Chen")
    (TRIAL, "Lang's lawyer, Dana Webb, said his client was innocent.", False),
    (STUDY, "The study, led by Jonas Petersen at Lindholm University, followed 2,000 adults for ten years.", False),
    (TRIAL, "Prosecutor Dana Webb told the jury in Kingsport that the former mayor accepted bribes.", True),
    (TRIAL, "Lang's lawyer Samuel Ortiz maintains that his client, the former mayor, is innocent.", True),
    (STUDY, "Researchers at Lindholm University, led by Dr. Mei Chen, followed 2,000 adults for a decade.", True),
    (STUDY, "Jonas Petersen of the Oslo Institute of Public Health, a co-author, said the results surprised the team.", True),
    # faithful: a place told wider (a part of the documents' setting, or a name the documents write as no place)
    (FLOOD, "Flooding closed the high street in Kent on Sunday.", True),
    (FLOOD, "Residents of Wyebridge were told to expect more flooding.", True),
    # faithful: one noun phrase in two orders ("X, chief executive of Y" / "Y chief executive X") swaps no names
    (WAREHOUSE, "Mark Dunn, chief executive of Kell Foods, thanked the crews from Ashford.", True),
    (WAREHOUSE, "Kell Foods chief executive Mark Dunn thanked the Ashford crews.", True),
    # in one clause of two: the other clause is right
    (LOGISTICS, "Northwind Logistics bought Velotrans in 2019, and a year later Eastline bought the freight broker Velotrans.", False),
    (MUSEUM, "Clara Voss painted the portrait in 1891; it was bought by the Nordic Art Trust in 1950.", False),
    # faithful: two sentences merged into one claim, naming both names
    (SOFTWARE, "Kira Tanaka created the Lumen image library in 2016, and Omar Haddad maintains its documentation.", True),
    (CLUB, "Jonas Berg joined Ravensdale FC from Malmö FF in July, a month before Pieter Alders left for FC Utrecht.", True),
    (MUSEUM, "The harbour scene by Edmund Krantz hangs beside the portrait Clara Voss painted in 1891.", True),
    (LOGISTICS, "Under chief executive Sara Lind, Northwind Logistics acquired the Dutch carrier Velotrans in 2019.", True),
    # faithful: a name of another sentence that describes, not replaces, the evidence's ("Sara Lind's company")
    (LOGISTICS, "Sara Lind's company acquired the Dutch parcel carrier Velotrans in 2019.", True),
    (CLUB, "Striker Jonas Berg, signed from Malmö FF in July, now plays for Ilse Vermeer's team.", True),
    (COUNCIL, "Ingrid Solberg's deputy resigned in June and was replaced by Nora Dahl.", True),
    # faithful: names in apposition and in a list
    (COUNCIL, "Nora Dahl replaced Karl Evensen, the deputy of Mayor Ingrid Solberg, in June.", True),
    (CLINICS, "Appointments at St Mary's Hospital and Riverside Health Centre are booked through the Healthline app.", True),
    (OBSERVATORY, "Its orbit was later calculated by Pablo Ruiz, who worked at the Calar Alto Observatory.", True),
    # faithful: "X, not Y", and the right name in the right place
    (RAIL, "The night train goes to Venice, not to Trieste, and leaves Vienna at 21:40.", True),
    (CLINICS, "The walk-in clinic is at Riverside Health Centre, not at St Mary's Hospital, and opens on Saturdays.", True),
    (OBSERVATORY, "Pablo Ruiz calculated the comet's orbit at the Calar Alto Observatory.", True),
    (RAIL, "A bus connects Venice with Trieste twice a day; tickets are sold by Railjet Travel.", True),
]


@pytest.mark.parametrize("document,answer,faithful", CASES)
def test_a_name_from_elsewhere_in_the_documents(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    if faithful:
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    else:
        (claim,) = result.contradicted_claims
        assert claim.conflicts[0].startswith("name: "), outcomes(result)
