"""Contradictions (issue 21): a claim checked against the sentence of the documents it rests on.

Hand-made cases of our own, in six domains (a managed database, a medicine leaflet, an HR policy, a car manual, an
HTTP API, a biography), scored through the real scoring path (`assess_batch`, the real int8 MiniLM, the default
policy).  One test per class of error the verdict used to miss: each of them came back `grounded` before evidence
alignment (every word and number of the claim stands *somewhere* in the documents).  Beside them, the faithful
answers of the same kinds that must stay grounded: paraphrases, faithful negations, roundings, unit conversions,
framing sentences and references to the context.
"""

from __future__ import annotations

import pytest

from ragtap.config import load_config
from ragtap.pipeline.batch import assess_batch
from ragtap.types import Assessment, ClaimOutcome, Document, Interaction, Verdict
from ragtap.wiring import build_policy

from conftest import ENV

DATABASE = (
    "Automated backups are retained for 7 days on the Basic plan and for 35 days on the Business plan. "
    "Point-in-time recovery is not available on the Basic plan. "
    "Read replicas can be added only after the primary instance has finished its first backup. "
    "Each instance supports at most 500 concurrent connections. "
    "Storage can be increased at any time but it cannot be decreased."
)
LEAFLET = (
    "Take one tablet twice a day with food. Do not take more than 4 tablets in 24 hours. "
    "Never mix this medicine with alcohol. "
    "The tablets must be stored below 25 degrees Celsius and kept out of the reach of children. "
    "Common side effects include headache and nausea; these usually pass within a week."
)
HR_POLICY = (
    "Employees may carry over at most 5 days of unused annual leave into the next year. "
    "New hires are eligible for the pension plan after 3 months of service, and for the bonus scheme after 12 months. "
    "Expense claims must be submitted within 30 days of purchase. "
    "Remote work is allowed for up to two days a week with the manager's approval."
)
CAR_MANUAL = (
    "Before updating the infotainment software, back up your saved profiles to a USB drive. "
    "The tire pressure should be checked when the tires are cold. "
    "The standard warranty covers 3 years or 60,000 km, whichever comes first; the battery is covered for 8 years. "
    "Do not use the cruise control on icy or snow-covered roads. "
    "The engine oil capacity is 4.5 liters."
)
API_DOCS = (
    "The /v2/orders endpoint is read-only: it accepts GET requests and rejects POST with status 405. "
    "Clients are limited to 100 requests per minute; requests over the limit receive status 429. "
    "Access tokens expire after 60 minutes and must be refreshed with the /v2/token endpoint. "
    "Webhooks are retried at least 3 times before a delivery is marked as failed."
)
BIOGRAPHY = (
    "Margit Kovacs was born in Szeged in 1921. She studied sculpture in Budapest and opened her first studio in 1948. "
    "Her ceramic reliefs won the Grand Prix in Brussels in 1958. "
    "The museum dedicated to her work was founded by the city of Szentendre in 1973."
)

ALL = {"database": DATABASE, "leaflet": LEAFLET, "hr": HR_POLICY, "car": CAR_MANUAL, "api": API_DOCS, "bio": BIOGRAPHY}


def score(embedder, document: str, answer: str, question: str = "What does the documentation say?") -> Assessment:  # type: ignore[no-untyped-def]
    item = Interaction(question=question, documents=(Document(document),), answer=answer)
    return assess_batch([item], embedder, build_policy(load_config(environ=ENV)))[0]


def contradicted(result: Assessment) -> list[str]:
    return [c.text for c in result.contradicted_claims]


def outcomes(result: Assessment) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """Each claim's outcome, reason, conflicts and missing names: what a failed assertion shows."""
    return [(c.outcome.value, c.reason, c.conflicts, c.missing_names) for c in result.claims]


def assert_grounded_or_one_contradiction(result: Assessment, faithful: bool) -> None:
    if faithful:
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    else:
        assert len(result.contradicted_claims) == 1, outcomes(result)


# --------------------------------------------------------------------------------------------------------------
# one class of contradiction per test: each claim is flagged, named as contradicted, and says why
# --------------------------------------------------------------------------------------------------------------

NEGATION = [
    ("leaflet", "You can take this medicine with alcohol."),
    ("database", "Point-in-time recovery is available on the Basic plan."),
    ("database", "Storage can be decreased at any time."),
    ("car", "You can use the cruise control on icy roads."),
]


@pytest.mark.parametrize("domain,answer", NEGATION)
def test_a_dropped_or_added_negation_is_contradicted(embedder, domain: str, answer: str) -> None:
    result = score(embedder, ALL[domain], answer)
    assert result.verdict is not Verdict.GROUNDED, result.explanation
    (claim,) = result.contradicted_claims
    assert any("negation" in c or "opposite" in c for c in claim.conflicts), claim.conflicts


NUMBER_FROM_ELSEWHERE = [
    ("car", "The standard warranty covers 8 years."),  # 8 is the battery's
    ("hr", "New hires can join the pension plan after 12 months of service."),  # 12 months is the bonus scheme's
    ("database", "Automated backups on the Basic plan are kept for 35 days."),  # 35 days is the Business plan's
    ("bio", "Margit Kovacs opened her first studio in 1958."),  # a year moved from another event
    ("car", "The standard warranty covers 3 years or 60,000 miles."),  # kilometres turned into miles
    ("api", "Access tokens expire after 100 minutes."),
]


@pytest.mark.parametrize("domain,answer", NUMBER_FROM_ELSEWHERE)
def test_a_number_taken_from_elsewhere_in_the_documents_is_contradicted(embedder, domain: str, answer: str) -> None:
    result = score(embedder, ALL[domain], answer)
    assert result.verdict is not Verdict.GROUNDED, result.explanation
    (claim,) = result.contradicted_claims
    assert claim.conflicts[0].startswith("number: "), claim.conflicts


def test_a_wrong_name_at_the_start_of_a_sentence_is_contradicted(embedder) -> None:
    result = score(embedder, BIOGRAPHY, "Kecskemet founded the museum dedicated to her work in 1973.")
    assert contradicted(result) == ["Kecskemet founded the museum dedicated to her work in 1973."]
    (claim,) = result.contradicted_claims
    assert claim.conflicts == ("name: kecskemet vs szentendre",)
    # the right name, first in its sentence, is no name missing
    assert score(embedder, BIOGRAPHY, "Szentendre founded the museum dedicated to her work in 1973.").verdict is Verdict.GROUNDED


def test_a_name_inside_another_word_does_not_count_as_found(embedder) -> None:
    document = "The frame of the Norden audio rack is welded steel. The rack ships with four feet."
    result = score(embedder, document, "The Audi rack ships with four feet and a welded frame.")
    assert result.verdict is not Verdict.GROUNDED, result.explanation
    (claim,) = result.unsupported_claims
    assert claim.missing_names == ("audi",)


ORDER_AND_QUANTIFIERS = [
    ("car", "Update the infotainment software before you back up your saved profiles."),  # reversed order
    ("hr", "Employees may carry over at least 5 days of unused annual leave."),  # at most -> at least
    ("api", "The /v2/orders endpoint is write-only."),  # read-only -> write-only
    ("database", "Each instance supports at least 500 concurrent connections."),
    ("car", "The tire pressure should be checked when the tires are hot."),
]


@pytest.mark.parametrize("domain,answer", ORDER_AND_QUANTIFIERS)
def test_reversed_order_and_flipped_quantifiers_are_contradicted(embedder, domain: str, answer: str) -> None:
    result = score(embedder, ALL[domain], answer)
    assert result.verdict is not Verdict.GROUNDED, result.explanation
    assert len(result.contradicted_claims) == 1, [(c.text, c.outcome, c.reason) for c in result.claims]


def test_a_one_word_answer_with_a_number_from_elsewhere_is_contradicted(embedder) -> None:
    result = score(embedder, BIOGRAPHY, "1948.", question="When did her ceramic reliefs win the Grand Prix in Brussels?")
    assert result.verdict is not Verdict.GROUNDED, result.explanation
    (claim,) = result.contradicted_claims
    assert (claim.start, claim.end) == (0, 5) and claim.conflicts == ("number: 1948 vs 1958",)
    right = score(embedder, BIOGRAPHY, "1958.", question="When did her ceramic reliefs win the Grand Prix in Brussels?")
    assert right.verdict is Verdict.GROUNDED, right.explanation


def test_contradicted_claims_point_at_their_evidence(embedder) -> None:
    result = score(embedder, CAR_MANUAL, "Check the tire pressure when the tires are cold. The standard warranty covers 8 years.")
    (claim,) = result.contradicted_claims
    assert claim.outcome is ClaimOutcome.CONTRADICTED and claim.evidence_document == 0
    assert "warranty covers 3 years" in CAR_MANUAL[claim.evidence_start:claim.evidence_end]
    assert "claim 2 of 2" in result.explanation and "contradicted" in result.explanation


# --------------------------------------------------------------------------------------------------------------
# faithful answers of the same kinds stay grounded
# --------------------------------------------------------------------------------------------------------------

FAITHFUL = [
    ("leaflet", "No, you should never combine this medicine with alcohol."),  # a faithful negation
    ("database", "No, the Basic plan does not offer point-in-time recovery."),
    ("database", "You can increase storage whenever you like, but you cannot decrease it."),
    ("car", "Back up your saved profiles to a USB drive before you update the infotainment software."),
    ("car", "The warranty lasts three years or 60,000 km, and the battery is covered for eight years."),  # number words
    ("car", "The engine takes about 4.5 L of oil."),
    ("leaflet", "Keep the tablets below 25 °C (77 °F), out of the reach of children."),  # a conversion the model adds
    ("leaflet", "Store the tablets below about 25 degrees Celsius."),
    ("hr", "You can carry over no more than five days of unused leave into the following year."),
    ("api", "GET requests are accepted by /v2/orders, but a POST is rejected with a 405."),
    ("api", "Clients may send up to 100 requests per minute; beyond that they get a 429."),
    ("bio", "Born in Szeged in 1921, Margit Kovacs studied sculpture in Budapest."),
    ("bio", "In 1958 her ceramic reliefs won the Grand Prix in Brussels."),
]


@pytest.mark.parametrize("domain,answer", FAITHFUL)
def test_faithful_paraphrases_negations_and_conversions_stay_grounded(embedder, domain: str, answer: str) -> None:
    result = score(embedder, ALL[domain], answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, [(c.text, c.outcome.value, c.reason, c.conflicts) for c in result.claims])


def test_a_rounded_figure_stays_grounded(embedder) -> None:
    document = "Ethanol boils at 78.37 degrees Celsius at sea level. Its density is 0.789 g/cm3."
    result = score(embedder, document, "Ethanol boils at about 78.4 °C at sea level.")
    assert result.verdict is Verdict.GROUNDED, result.explanation


def test_framing_sentences_and_references_to_the_context_stay_grounded(embedder) -> None:
    answer = ("Based on the provided passages, here is what the policy says:\n"
              "- Expense claims must be submitted within 30 days of purchase (passage 3).\n"
              "- Remote work is allowed for up to two days a week with the manager's approval, as described in document 2.\n"
              "I hope this helps!")
    result = score(embedder, HR_POLICY, answer)
    assert result.verdict is Verdict.GROUNDED, (result.explanation, [(c.text, c.outcome.value, c.reason) for c in result.claims])
    reasons = [c.reason for c in result.claims if c.of == "answer"]
    assert reasons[0] == "framing" and reasons[-1] == "framing"


def test_a_lists_announcement_is_framing_but_not_a_count_or_a_member(embedder) -> None:
    # "there are several things ..." announces the list that follows (DelucionQA's annotators call it supported, the
    # old rule found its words missing); a count or a member named in it is a claim.
    answer = ("Yes, there are several things to keep in mind about expense claims. "
              "Expense claims must be submitted within 30 days of purchase.")
    result = score(embedder, HR_POLICY, answer, "Is there anything I should know about expense claims?")
    assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    assert [c.reason for c in result.claims if c.of == "answer"][0] == "framing"
    for claim in ("There are three ways to submit an expense claim.",
                  "There are several things to know, including that claims are paid within 5 days."):
        judged = score(embedder, HR_POLICY, claim)
        assert [c.reason for c in judged.claims if c.of == "answer"][0] != "framing", outcomes(judged)


def test_a_refusal_does_not_hide_an_invented_claim(embedder) -> None:
    answer = ("The documents do not mention the price of the Business plan. "
              "However, the Business plan costs 49 dollars a month and includes daily snapshots to another region.")
    result = score(embedder, DATABASE, answer)
    assert result.verdict is Verdict.UNSUPPORTED_ANSWER, result.explanation
    assert result.refusal_phrase is not None and "declines" in result.explanation
    assert [c.text for c in result.unsupported_claims] == [
        "However, the Business plan costs 49 dollars a month and includes daily snapshots to another region."
    ]
    plain = score(embedder, DATABASE, "The documents do not mention the price of the Business plan.")
    assert plain.verdict is Verdict.REFUSAL, plain.explanation


# --------------------------------------------------------------------------------------------------------------
# contradicted claims stay distinct where the claims go: Prometheus, OpenTelemetry, the score output
# --------------------------------------------------------------------------------------------------------------


def test_contradicted_claims_are_counted_apart_in_prometheus_and_otel(embedder) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.exporters.otel import OtelExporter
    from ragtap.exporters.prometheus import PrometheusExporter
    from ragtap.exporters.settings import OtelSettings
    from ragtap.records import output_record

    answer = "Check the tire pressure when the tires are cold. The standard warranty covers 8 years. Wax the car weekly with a clay bar."
    item = Interaction(question="What does the manual say?", documents=(Document(CAR_MANUAL),), answer=answer, model="m")
    assessment = assess_batch([item], embedder, build_policy(load_config(environ=ENV)))[0]
    assert [c.outcome for c in assessment.claims if c.of == "answer"] == [
        ClaimOutcome.SUPPORTED, ClaimOutcome.CONTRADICTED, ClaimOutcome.NOT_FOUND]

    prometheus = PrometheusExporter()
    prometheus.interaction_scored(item, assessment, 0.1)
    text = prometheus.render()[0].decode()
    assert 'ragtap_unsupported_claims_total{model="m"} 2.0' in text and 'ragtap_contradicted_claims_total{model="m"} 1.0' in text

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OtelExporter(OtelSettings(enabled=True, capture_content=True), tracer_provider=provider).interaction_scored(item, assessment, 0.1)
    (span,) = spans.get_finished_spans()
    (event,) = [e for e in span.events if e.attributes.get("gen_ai.evaluation.name") == "ragtap.claims"]
    start = answer.index("The standard")
    assert event.attributes["ragtap.claims.contradicted"] == 1
    assert tuple(event.attributes["ragtap.claims.contradicted_offsets"]) == (f"{start}-{start + len('The standard warranty covers 8 years.')}",)
    assert '"conflicts": ["number: 8 year vs 3 year"]' in event.attributes["ragtap.claims.unsupported_text"]

    record = output_record(item, assessment)
    assert record["contradicted_claims"] == 1 and record["unsupported_claims"] == 2
    assert [c["outcome"] for c in record["claims"] if c["of"] == "answer"] == ["supported", "contradicted", "not_found"]


# --------------------------------------------------------------------------------------------------------------
# a second set, written after the rules above: times of day, dates, multiples, "only", a subject swapped in from
# another sentence, and their faithful counterparts
# --------------------------------------------------------------------------------------------------------------

SAAS = ("Projects can be deleted by owners and admins. Deleted projects are kept for 30 days before they are purged. "
        "The first backup runs at 2 AM UTC and a second backup runs at 2 PM UTC. Free plans include at most 3 seats. "
        "Invoices are issued on March 5 each year.")
PHARMA = ("Adults may take up to 8 tablets in 24 hours. Children under 12 should not take this product. Stop use and ask a "
          "doctor if pain gets worse or lasts more than 10 days. The product contains 500 mg of paracetamol per tablet.")
LEAVE = ("Employees receive 25 days of paid leave per year. Parental leave is 16 weeks at full pay. Overtime is paid at 1.5 "
         "times the hourly rate. Probation lasts six months.")
LOVELACE = ("Ada Lovelace was born in London in 1815. She worked with Charles Babbage on the Analytical Engine. Her notes, "
            "published in 1843, include the first published algorithm.")

SECOND_SET = [
    (SAAS, "Deleted projects are kept for 90 days before they are purged.", False),
    (SAAS, "Deleted projects are kept for a month before being purged.", True),
    (SAAS, "The second backup runs at 2 AM UTC.", False),
    (SAAS, "Invoices are issued on March 7 each year.", False),
    (SAAS, "Only owners can delete projects.", False),
    (PHARMA, "Children under 12 can take this product.", False),
    (PHARMA, "Children under 12 should not use this product.", True),
    (PHARMA, "Each tablet contains 0.5 g of paracetamol.", True),
    (PHARMA, "Each tablet contains 500 g of paracetamol.", False),
    (LEAVE, "Parental leave is 16 weeks at half pay.", False),
    (LEAVE, "Overtime is paid at twice the hourly rate.", False),
    (LEAVE, "Employees get twenty-five days of paid leave a year.", True),
    (LOVELACE, "Charles Babbage was born in London in 1815.", False),
    (LOVELACE, "Lovelace worked with Babbage on the Analytical Engine.", True),
    (LOVELACE, "Her notes were published in 1815.", False),
]


@pytest.mark.parametrize("document,answer,faithful", SECOND_SET)
def test_second_set(embedder, document: str, answer: str, faithful: bool) -> None:
    assert_grounded_or_one_contradiction(score(embedder, document, answer), faithful)


# --------------------------------------------------------------------------------------------------------------
# a third set, written at the end of the wave in six more domains before running it (34 cases, 26 right at first).
# Five of the misses were classes, not cases, and the rules were widened: a number's own word tied "two bags" to
# another sentence's "two bags" (conflicts.py `_context_of`); "no longer supported" against "removed support for" was
# taken for a negation on one side only (polarity.py `_CESSATION`); an opposite whose own word also stands elsewhere
# in the sentence ("enabled by default" / "disabled by default and can be enabled"); a claim asserting the negated
# half of a sentence ("covers flood damage" / "covers theft and fire damage but does not cover flood damage",
# polarity.py `_asserts_the_denied_part`); two numbers of one sentence swapped (conflicts.py `_swapped`).  Three
# misses remained: swapped colours (caught since: FOURTH_SET below), a dropped qualifier ("on the day the contract is
# signed" / "the first day of the month after"), a command's action swapped with another command's ("`pull` uploads").
# THIRD_SET_MORE: faithful and false neighbours of the widened rules, written after them.
# --------------------------------------------------------------------------------------------------------------

ROUTER = ("To reset the router, hold the reset button for 10 seconds while the device is powered on. The status light "
          "blinks orange during the reset and turns solid green when the router is ready. Do not unplug the router while "
          "the firmware is updating. The guest network is disabled by default and can be enabled in the admin panel. The "
          "router supports up to 32 connected devices.")
INSURANCE = ("The policy covers theft and fire damage but does not cover flood damage. Claims must be reported within 48 "
             "hours of the incident. The deductible is 250 euros per claim. Jewellery is covered up to a limit of 2,000 "
             "euros. Coverage begins on the first day of the month after the contract is signed.")
BAGGAGE = ("Economy passengers may check one bag of up to 23 kg. Business class passengers may check two bags of up to 32 "
           "kg each. Lithium batteries must be carried in cabin baggage, never in checked baggage. Oversized items such "
           "as skis are accepted for a fee of 60 dollars.")
RECIPE = ("Preheat the oven to 180 degrees Celsius. Mix the flour and sugar before adding the eggs. Bake the cake for 35 "
          "minutes, then let it cool for 10 minutes before removing it from the tin. The cake can be frozen for up to "
          "three months.")
WESTPHALIA = ("The Treaty of Westphalia was signed in 1648 and ended the Thirty Years' War. The negotiations took place in "
              "the cities of Osnabrück and Münster. The treaty recognised the independence of the Dutch Republic. "
              "Cardinal Mazarin represented France during the talks.")
RELEASE = ("Version 4.2 removed support for Python 3.7. The cache is enabled by default and stores entries for 15 minutes. "
           "The CLI command `sync` uploads local changes; `pull` downloads remote changes without uploading anything. "
           "Logs older than 7 days are deleted automatically.")
QUESTIONS = {ROUTER: "How do I reset the router?", INSURANCE: "What does the policy cover?", BAGGAGE: "What are the baggage rules?",
             RECIPE: "How do I bake the cake?", WESTPHALIA: "What was the Treaty of Westphalia?", RELEASE: "What changed in version 4.2?"}

THIRD_SET = [
    (ROUTER, "Hold the reset button for 10 seconds while the router is on. The light turns solid green when it is ready.", True),
    (ROUTER, "Hold the reset button for 32 seconds while the router is on.", False),
    (ROUTER, "You can unplug the router while the firmware is updating.", False),
    (ROUTER, "The router supports at least 32 connected devices.", False),
    (ROUTER, "The guest network is enabled by default.", False),
    (ROUTER, "The guest network is off by default; you can turn it on in the admin panel.", True),
    (INSURANCE, "The policy covers theft and fire damage. Flood damage is not covered.", True),
    (INSURANCE, "The policy covers flood damage as well as theft and fire.", False),
    (INSURANCE, "Claims must be reported within 48 days of the incident.", False),
    (INSURANCE, "The deductible is 2,000 euros per claim.", False),
    (INSURANCE, "Jewellery is covered up to 2,000 euros, and the deductible is 250 euros.", True),
    (BAGGAGE, "Economy passengers may check two bags of up to 23 kg.", False),
    (BAGGAGE, "Lithium batteries must be packed in checked baggage.", False),
    (BAGGAGE, "Business class passengers can check two bags, each up to 32 kg.", True),
    (BAGGAGE, "Skis are accepted for a fee of 23 dollars.", False),
    (BAGGAGE, "Economy passengers may check one bag of up to 23 pounds.", False),
    (RECIPE, "Add the eggs before mixing the flour and sugar.", False),
    (RECIPE, "Preheat the oven to 180 degrees Fahrenheit.", False),
    (RECIPE, "Bake for 35 minutes and let the cake cool for 10 minutes before taking it out of the tin.", True),
    (RECIPE, "The cake cannot be frozen.", False),
    (RECIPE, "Bake the cake for 10 minutes, then let it cool for 35 minutes.", False),
    (WESTPHALIA, "The Treaty of Westphalia was signed in 1648, ending the Thirty Years' War.", True),
    (WESTPHALIA, "Cardinal Richelieu represented France during the talks.", False),
    (WESTPHALIA, "The negotiations took place in Vienna and Münster.", False),
    (WESTPHALIA, "The treaty ended the Hundred Years' War.", False),
    (WESTPHALIA, "The treaty did not recognise the independence of the Dutch Republic.", False),
    (RELEASE, "Version 4.2 added support for Python 3.7.", False),
    (RELEASE, "The cache is disabled by default.", False),
    (RELEASE, "Logs older than 15 days are deleted automatically.", False),
    (RELEASE, "Python 3.7 is no longer supported as of version 4.2.", True),
    (RELEASE, "Cached entries are kept for a quarter of an hour.", True),
]


PENSION = ("New hires are eligible for the pension plan after 3 months of service, and for the bonus scheme after 12 months. "
           "Expense claims must be submitted within 30 days of purchase.")
QUESTIONS[PENSION] = "When are new hires eligible?"

THIRD_SET_MORE = [
    (ROUTER, "The guest network can be enabled in the admin panel.", True),
    (ROUTER, "The guest network is disabled by default.", True),
    (INSURANCE, "The policy covers theft and fire damage.", True),
    (INSURANCE, "Flood damage is excluded from the policy.", True),
    (INSURANCE, "The policy does not cover flood damage.", True),
    (INSURANCE, "Flood damage is covered by the policy.", False),
    (BAGGAGE, "Lithium batteries go in cabin baggage.", True),
    (RELEASE, "The cache is on by default and keeps entries for 15 minutes.", True),
    (RELEASE, "`pull` downloads remote changes and never uploads anything.", True),
    (RECIPE, "Bake the cake for 35 minutes, then let it cool for 10 minutes.", True),
    (RECIPE, "Let the cake cool for 10 minutes after baking it for 35 minutes.", True),
    (PENSION, "New hires join the pension plan after 3 months and the bonus scheme after 12 months.", True),
    (PENSION, "New hires join the pension plan after 12 months and the bonus scheme after 3 months.", False),
    (PENSION, "The bonus scheme starts after 12 months, the pension plan after 3.", True),
    (BAGGAGE, "Economy passengers may check one bag of up to 23 kg, business class passengers two bags of up to 32 kg.", True),
    (BAGGAGE, "Economy passengers may check one bag of up to 32 kg, business class passengers two bags of up to 23 kg.", False),
]


@pytest.mark.parametrize("document,answer,faithful", THIRD_SET + THIRD_SET_MORE)
def test_third_set(embedder, document: str, answer: str, faithful: bool) -> None:
    assert_grounded_or_one_contradiction(score(embedder, document, answer, question=QUESTIONS[document]), faithful)


# --------------------------------------------------------------------------------------------------------------
# a fourth set: the classes of false alarm found on clean answers of real generators (RAGTruth summaries, where 27% of
# the clean answers were flagged), written in other domains than the answers they were found in.  Each faithful case
# but two was flagged by the previous code (the two marked "neighbour" pass on both); the unfaithful neighbours show
# that each fix keeps the check it narrows.
# --------------------------------------------------------------------------------------------------------------

INSPECTION = ("The inspector found that the bearings of the bridge were worn and recommended replacing them within two "
              "years. The rescue crews could make little progress against the flooding overnight. The clinic is run by a "
              "nonprofit foundation that funds free eye exams.")
SHIFTS = ("Tomas says that about a month before we visited, the company moved his team to the night shift. The union "
          "objected to the change in a letter to the board.")
JURY = ("Marie Keller won the regional architecture prize in 2019. A Geneva jury, which met twice, praised the architect's "
        "design of the pedestrian bridge.")
CUSTODY = ("Human remains were found in a duffel bag near the river. The Middlesex District Attorney said a man had been "
           "charged with murder.")
OUTBREAK = ("The CDC has yet to determine what caused the illness. Canadian jets are part of the U.S.-led coalition. "
            "Exhibits from Angoule\u0302me and Zu\u0308rich were shown on television.")
PERMISSIONS = "Admins can delete projects and members can only view them. Owners manage billing."
QUESTIONS.update({PERMISSIONS: "Who can delete projects?", INSPECTION: "What did the inspection find?", SHIFTS: "What happened to Tomas's team?",
                  JURY: "Who praised the design?", CUSTODY: "What was found?", OUTBREAK: "What is known?"})

FOURTH_SET = [
    # "noted" and "noting" are no "not" (the stemmer made them one)
    (INSPECTION, "The inspector noted that the bearings of the bridge were worn and should be replaced within two years.", True),
    (INSPECTION, "The inspector noted that the bridge's bearings were not worn.", False),
    # "little progress" says what "unable to make much progress" says
    (INSPECTION, "The rescue crews were unable to make progress against the flooding overnight.", True),
    # "non-profit" is "nonprofit", not its opposite
    (INSPECTION, "A non-profit foundation runs the clinic and funds free eye exams.", True),
    # "a month before we visited" dates an event; it does not order the two events the claim relates
    (SHIFTS, "Tomas's team was moved to the night shift before our visit, and the union objected to the change.", True),  # neighbour
    (SHIFTS, "Tomas says the union objected after the company moved his team to the night shift.", True),
    # a name that describes the sentence's subject ("A Geneva jury") is not that subject's name
    (JURY, "Marie Keller's design of the pedestrian bridge was praised by a jury that met twice.", True),
    # a name's neighbours are read within its own sentence (Cambridge is missing from the documents: flagged, but
    # not as the District Attorney's name swapped)
    (CUSTODY, "Human remains were found in a duffel bag near the river in Cambridge.", "not contradicted"),  # neighbour
    # the long form of an acronym the documents use; a dotted acronym before a hyphen; accents written either way
    (OUTBREAK, "The Centers for Disease Control and Prevention (CDC) has yet to determine what caused the illness.", True),
    (OUTBREAK, "Canadian jets are part of the US-led coalition.", True),
    (OUTBREAK, "Exhibits from Angoulême and Zürich were shown on TV.", True),
    # two words of one sentence trading places (the third set's swapped colours; roles swapped the same way)
    (ROUTER, "The status light blinks green during the reset and turns solid orange when the router is ready.", False),
    (PERMISSIONS, "Members can delete projects and admins can only view them.", False),
    (PERMISSIONS, "Admins can delete projects, and members can only view them.", True),
    (PERMISSIONS, "Members can only view projects; admins can delete them.", True),
    (PERMISSIONS, "Projects can be deleted by admins and viewed by members.", True),
]


@pytest.mark.parametrize("document,answer,faithful", FOURTH_SET)
def test_fourth_set(embedder, document: str, answer: str, faithful: bool | str) -> None:
    result = score(embedder, document, answer, question=QUESTIONS[document])
    if faithful == "not contradicted":
        assert not result.contradicted_claims and result.verdict is not Verdict.GROUNDED, outcomes(result)
    elif faithful:
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    else:
        assert result.verdict is not Verdict.GROUNDED, outcomes(result)


def test_a_capitalised_function_word_is_no_name() -> None:
    from ragtap.scoring.lexical import names

    assert names("Visitors can use the Find Your Park website.") == {"find", "park"}
    assert names("The festival runs from May 2 to May 9 in Oslo.") == {"may", "oslo"}  # "May" the month stays


def test_day_and_medium_short_forms_are_the_same_names() -> None:
    from ragtap.scoring.lexical import DocumentVocabulary, lexical_evidence

    vocabulary = DocumentVocabulary.of(["Entry is free on Saturday and Sunday; the finals are shown on television."])
    assert lexical_evidence("Entry is free on Sat. and Sun. and the finals are on TV.", vocabulary).missing_names == ()
    assert lexical_evidence("Entry is free on Fri. and the finals are on HBO.", vocabulary).missing_names == ("fri", "hbo")


def test_numbers_written_with_a_hyphen_are_read() -> None:
    from ragtap.scoring.lexical import DocumentVocabulary, lexical_evidence

    vocabulary = DocumentVocabulary.of(["The 1,500-plus cadets ran a two-kilometer course."])
    assert lexical_evidence("The 1,500 cadets ran a 2-kilometer course.", vocabulary).missing_numbers == ()
    assert lexical_evidence("The 1,500 cadets ran a three-kilometer course.", vocabulary).missing_numbers == ("3 km",)


# --------------------------------------------------------------------------------------------------------------
# a fifth set, written blind in six more domains and run once before any change: 26 of 37 right at first.  The misses
# that were classes were fixed as classes (a unit's number not stated by the same value counting another thing; "not
# allowed without consent"; the negated clause's subject and a verbless "but not on ..."; two words trading places,
# now with repeated neighbours and names; "attendance" is "attend" to the stemmer; a name of the sentence moved into
# its subject's place): 35 of 37.  Two misses remain and are marked: a command's action taken from the other command
# of the sentence ("`migrate down` applies"), and a relation reversed around its verb ("environment variables
# override the file"; a rule for it was tried and fired on 66 real answers, docs/thresholds.md).
# FIFTH_SET_MORE: faithful neighbours of the widened rules, written after them.
# --------------------------------------------------------------------------------------------------------------

LEASE = ("The tenant must give at least 60 days' written notice before moving out. The security deposit is two months' rent "
         "and is returned within 30 days of the end of the lease. Pets are not allowed without the landlord's written consent. "
         "The landlord pays for water and trash collection; the tenant pays for electricity and internet. "
         "Rent is due on the first day of each month, and a late fee of 50 dollars applies after the fifth day.")
VACCINE = ("The first dose is given at 12 months of age and the second dose between 4 and 6 years. "
           "The vaccine should not be given to people with a severe allergy to gelatin or neomycin. "
           "Mild fever occurs in about 1 in 6 children within 12 days of vaccination. "
           "Dr. Anna Berg leads the immunisation clinic, which is open on Tuesdays and Thursdays.")
TRAIN = ("The express train leaves Lyon at 07:40 and arrives in Paris at 09:36. The regional train takes 3 hours and 10 minutes. "
         "Bicycles are allowed on regional trains but not on express trains. Tickets bought online can be refunded up to "
         "2 hours before departure; tickets bought at the station cannot be refunded. Children under 4 travel free.")
CLI = ("Run `migrate up` to apply pending migrations and `migrate down` to roll back the last one. "
       "The `--dry-run` flag prints the SQL without executing it. Migrations are applied in order of their timestamp. "
       "The tool refuses to run if the database version is newer than the tool's version. Configuration is read from "
       "migrate.yaml, which overrides environment variables.")
HISTORY = ("The Hanseatic League was founded in the 13th century by merchant guilds in Lübeck and Hamburg. "
           "At its height it included nearly 200 towns. Its decline began in the 15th century, when the Dutch and the English "
           "expanded their trade in the Baltic. The last formal diet of the League met in 1669.")
MATCH = ("Ajax beat PSV 3-1 on Sunday in Amsterdam. Kudus scored twice in the first half and Bergwijn added a third after "
         "the break. PSV's only goal came from a penalty by Luuk de Jong in the 78th minute. The attendance was 54,000.")

FIFTH_SET = [
 (LEASE, "The tenant must give at least 30 days' written notice before moving out.", False),
 (LEASE, "Pets are allowed without the landlord's consent.", False),
 (LEASE, "The tenant pays for water and trash collection, and the landlord pays for electricity and internet.", False),
 (LEASE, "The security deposit is returned within 60 days of the end of the lease.", False),
 (LEASE, "Rent is due on the fifth day of each month.", False),
 (LEASE, "You need the landlord's written consent to keep a pet.", True),
 (LEASE, "A 50-dollar late fee is charged if rent is paid after the fifth of the month.", True),
 (LEASE, "Notice of at least two months is required before you move out.", True),
 (VACCINE, "The second dose is given at 12 months of age.", False),
 (VACCINE, "The vaccine can be given to people with a severe allergy to gelatin.", False),
 (VACCINE, "Mild fever occurs in about 1 in 6 children within 6 days of vaccination.", False),
 (VACCINE, "Dr. Anna Bergman leads the immunisation clinic.", False),
 (VACCINE, "The clinic is open on Tuesdays and Fridays.", False),
 (VACCINE, "People severely allergic to neomycin should not receive the vaccine.", True),
 (VACCINE, "About one child in six gets a mild fever within 12 days of the shot.", True),
 (TRAIN, "The express train leaves Lyon at 09:36 and arrives in Paris at 07:40.", False),
 (TRAIN, "Bicycles are allowed on express trains.", False),
 (TRAIN, "Tickets bought at the station can be refunded up to 2 hours before departure.", False),
 (TRAIN, "Children under 6 travel free.", False),
 (TRAIN, "The regional train takes about three hours.", True),
 (TRAIN, "You cannot take a bicycle on an express train.", True),
 (CLI, "Run `migrate down` to apply pending migrations.", False),
 (CLI, "The `--dry-run` flag executes the SQL without printing it.", False),
 (CLI, "Environment variables override migrate.yaml.", False),
 (CLI, "The tool runs even if the database version is newer than the tool's version.", False),
 (CLI, "With `--dry-run`, the SQL is printed but not executed.", True),
 (CLI, "Migrations run in timestamp order.", True),
 (HISTORY, "The Hanseatic League was founded in the 15th century.", False),
 (HISTORY, "At its height it included nearly 2,000 towns.", False),
 (HISTORY, "The League was founded by merchant guilds in Lübeck and Bremen.", False),
 (HISTORY, "Its decline began when the Dutch and the English expanded their trade in the Baltic.", True),
 (HISTORY, "The last diet met in 1669.", True),
 (MATCH, "PSV beat Ajax 3-1 on Sunday in Amsterdam.", False),
 (MATCH, "Bergwijn scored twice in the first half.", False),
 (MATCH, "Luuk de Jong scored PSV's only goal from a penalty in the 68th minute.", False),
 (MATCH, "Kudus scored two goals before half-time, and Ajax won 3-1.", True),
 (MATCH, "About 54,000 people attended.", True),
]
FILM = ("Skyfall is a 2012 spy film directed by Sam Mendes. Founded in 1998 by Anna Holm, Nordvik is a Swedish furniture "
        "maker.")
FIFTH_SET_MISSES = {
    "Run `migrate down` to apply pending migrations.",
    "Environment variables override migrate.yaml.",
}
FIFTH_SET_MORE = [
    (MATCH, "PSV lost 3-1 to Ajax on Sunday in Amsterdam.", True),
    (MATCH, "On Sunday in Amsterdam, PSV were beaten 3-1 by Ajax.", True),
    (MATCH, "Kudus scored twice in the first half.", True),
    (MATCH, "Bergwijn added a third goal after the break.", True),
    (MATCH, "Bergwijn scored after the break.", True),
    (FILM, "Sam Mendes directed the film Skyfall.", True),  # the passive's agent is the subject
    (FILM, "Nordvik was founded in 1998 by Anna Holm.", True),  # a fronted participle is no subject's name
    (LEASE, "The landlord covers water and trash collection, while electricity and internet are paid by the tenant.", True),
    (LEASE, "Pets need the landlord's written consent.", True),
    (TRAIN, "Express trains do not take bicycles, but regional trains do.", True),
    (TRAIN, "Only tickets bought online can be refunded, up to 2 hours before departure.", True),
    (VACCINE, "About 1 in 6 children gets a mild fever within 12 days.", True),
]


@pytest.mark.parametrize("document,answer,faithful", FIFTH_SET + FIFTH_SET_MORE)
def test_fifth_set(embedder, document: str, answer: str, faithful: bool) -> None:
    result = score(embedder, document, answer)
    right = (result.verdict is Verdict.GROUNDED) == faithful
    assert right != (answer in FIFTH_SET_MISSES), outcomes(result)  # a listed miss that comes right must leave the list


# --------------------------------------------------------------------------------------------------------------
# NUMBERS_SIXTH_ROUND: the number classes a sixth, blind hand-made set found (its documents are not used here).
# Faithful answers that work a figure out from the evidence (a sum, a difference, a count times a value "each", a
# ratio, the hours between two times), and the word "one" that counts nothing ("no one", "One tern flies ...") were
# flagged as numbers missing from the documents.  Numbers taken from another part of the same sentence whose
# qualifier the claim dropped or swapped ("late check-in", "on Saturdays", "regular registration") and a change
# told backwards ("from 5.8% to 4.9%" where it rose to 5.8% from 4.9%) passed.  Each case marked True or False was
# wrong on the previous code; those marked "neighbour" pass on both and show that the new rules keep their checks.
# --------------------------------------------------------------------------------------------------------------

CABIN = ("The cabin sleeps up to six guests and costs 140 dollars per night, with a one-time cleaning fee of 60 dollars. "
         "Guests must check out of the cabin by 10 a.m., and late check-out until 1 p.m. costs 30 dollars. "
         "The hot tub is open from 8 a.m. to 10 p.m.")
FUNDS = ("The Growth Fund returned 12% last year and the Income Fund 4%; the Growth Fund charges an annual fee of 0.9%, "
         "against 0.3% for the Income Fund.")
CERTIFICATE = "The certificate consists of four modules of 6 weeks each, followed by a capstone project."
TERN = ("The Arctic tern migrates about 70,000 km each year, the longest migration of any animal. A breeding pair usually "
        "lays two eggs.")
LIBRARY = "The library is open from 9 a.m. to 8 p.m. on weekdays and from 10 a.m. to 4 p.m. on Saturdays."
CONFERENCE = "Early-bird registration for the conference closes on March 15 and regular registration on April 30."
LABOUR = "Unemployment in the region rose to 5.8% from 4.9% over the year, while inflation eased from 3.1% to 2.4%."

NUMBERS_QUESTIONS = {CABIN: "How much are two nights at the cabin, and when do I have to leave?"}  # the user's "two"

NUMBERS_SIXTH_ROUND = [
    # derived numbers: worked out from the aligned evidence, not invented
    (CABIN, "Two nights cost 280 dollars, plus the cleaning fee of 60 dollars.", True),
    (CABIN, "The hot tub is open for 14 hours a day.", True),
    (CABIN, "Late check-out at 1 p.m. gives you 3 more hours.", True),
    (FUNDS, "The Growth Fund's 12% return was three times the Income Fund's 4%.", True),
    (FUNDS, "The Growth Fund returned 8 percentage points more than the Income Fund.", True),
    (FUNDS, "At 0.9%, the Growth Fund's fee is triple the Income Fund's 0.3%.", True),
    (CERTIFICATE, "The four modules take 24 weeks in total.", True),
    (CABIN, "Two nights cost 300 dollars.", "neighbour flagged"),  # no sum, product or difference gives 300
    (CABIN, "The hot tub is open for 12 hours a day.", "neighbour flagged"),
    (FUNDS, "The Growth Fund's 12% return was four times the Income Fund's 4%.", "neighbour flagged"),
    (CERTIFICATE, "The four modules take 20 weeks in total.", "neighbour flagged"),
    # "one" and "first" that count nothing
    (TERN, "One Arctic tern can fly about 70,000 km in a year.", True),
    (TERN, "No one has recorded a longer migration than the Arctic tern's 70,000 km a year.", True),
    (TERN, "A breeding pair of Arctic terns usually lays one egg.", "neighbour flagged"),  # "one" still conflicts
    # a number from another part of the sentence, its qualifier dropped or swapped
    (CABIN, "Guests must check out of the cabin by 1 p.m.", False),
    (LIBRARY, "On Saturdays the library closes at 8 p.m.", False),
    (CONFERENCE, "Regular registration closes on March 15.", False),
    (CABIN, "Late check-out until 1 p.m. costs 30 dollars.", "neighbour"),
    (CABIN, "Guests have to leave the cabin by 10 a.m.", "neighbour"),
    (LIBRARY, "On Saturdays the library is open until 4 p.m.", "neighbour"),
    (LIBRARY, "On weekdays it stays open until 8 p.m.", "neighbour"),
    (CONFERENCE, "Regular registration closes on April 30.", "neighbour"),
    (CONFERENCE, "You can register at the early-bird rate until March 15.", "neighbour"),
    # a change told backwards
    (LABOUR, "Unemployment in the region went from 5.8% to 4.9% over the year.", False),
    (LABOUR, "Over the year, inflation moved from 2.4% to 3.1%.", False),
    (LABOUR, "Unemployment in the region went from 4.9% to 5.8% over the year.", "neighbour"),
    (LABOUR, "Inflation eased to 2.4% from 3.1%.", "neighbour"),
]


@pytest.mark.parametrize("document,answer,faithful", NUMBERS_SIXTH_ROUND)
def test_numbers_sixth_round(embedder, document: str, answer: str, faithful: bool | str) -> None:
    result = score(embedder, document, answer, question=NUMBERS_QUESTIONS.get(document, "What does the document say?"))
    if faithful is True or faithful == "neighbour":
        assert result.verdict is Verdict.GROUNDED, (result.explanation, outcomes(result))
    elif faithful == "neighbour flagged":
        assert result.verdict is not Verdict.GROUNDED, outcomes(result)
    else:
        (claim,) = result.contradicted_claims
        assert claim.conflicts[0].startswith("number: "), claim.conflicts
