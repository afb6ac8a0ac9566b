"""Claim-level grounding (issue 12) on hand-made cases, with the real MiniLM embedder and the default thresholds:
one test per claim rule (an invented sentence among copied ones, an invented list item, a changed number, a
changed name, a hedge, a long document whose support lies past the first 256 wordpieces), plus the pieces
(claim splitting with offsets, passages, lexical evidence) and the claim outputs."""

from __future__ import annotations

import json

import pytest

from ragtap.config import load_config
from ragtap.pipeline.batch import assess_batch
from ragtap.records import output_record
from ragtap.scoring.claims import ClaimThresholds, decide, rejudge, split_claims
from ragtap.scoring.lexical import DocumentVocabulary, lexical_evidence
from ragtap.scoring.quantities import quantities
from ragtap.scoring.passages import split_passages
from ragtap.types import Assessment, ClaimOutcome, Document, Interaction, Verdict
from ragtap.wiring import build_policy

from conftest import ENV

MANUAL = (
    "To change a flat tire, park on level ground and apply the parking brake. Loosen the lug nuts a half turn "
    "before raising the vehicle. Raise the vehicle with the jack until the tire clears the ground. Remove the lug "
    "nuts and the wheel. Mount the spare tire and tighten the lug nuts to 120 Nm in a star pattern."
)
QUESTION = "How do I change a flat tire?"


def policy():  # type: ignore[no-untyped-def]
    return build_policy(load_config(environ=ENV))


def score(embedder, answer: str, documents: list[str] | None = None, supporting: str | None = None, question: str = QUESTION) -> Assessment:  # type: ignore[no-untyped-def]
    item = Interaction(question=question, documents=tuple(Document(d) for d in (documents or [MANUAL])), answer=answer, supporting=supporting)
    return assess_batch([item], embedder, policy())[0]


def unsupported_texts(assessment: Assessment) -> list[str]:
    return [c.text for c in assessment.unsupported_claims]


# --------------------------------------------------------------------------------------------------------------
# one test per claim rule
# --------------------------------------------------------------------------------------------------------------


def test_copied_answer_is_grounded_claim_by_claim(embedder) -> None:
    answer = ("Park on level ground and apply the parking brake. Loosen the lug nuts a half turn before raising the vehicle. "
              "Then raise the vehicle with the jack and remove the wheel.")
    result = score(embedder, answer)
    assert result.verdict is Verdict.GROUNDED, result.explanation
    assert [c.supported for c in result.claims] == [True, True, True]


def test_an_invented_sentence_among_copied_ones_is_named(embedder) -> None:
    invented = "Always have the tire balanced by a technician and rotate all four tires every 5,000 miles afterwards."
    answer = ("Park on level ground and apply the parking brake. Loosen the lug nuts a half turn before raising the vehicle. "
              f"{invented} Mount the spare tire and tighten the lug nuts in a star pattern.")
    result = score(embedder, answer)
    assert result.verdict is Verdict.UNSUPPORTED_ANSWER, result.explanation
    assert unsupported_texts(result) == [invented]
    claim = result.unsupported_claims[0]
    assert answer[claim.start:claim.end] == invented  # offsets point into the answer the app received
    assert "claim 3 of 4" in result.explanation and invented not in result.explanation  # no answer text exported


def test_an_invented_list_item_is_named(embedder) -> None:
    answer = ("Here are the steps:\n"
              "1. Apply the parking brake on level ground.\n"
              "2. Loosen the lug nuts before raising the vehicle.\n"
              "3. Spray penetrating oil on rusty wheel studs and wait ten minutes.\n"
              "4. Raise the vehicle with the jack and remove the wheel.")
    result = score(embedder, answer)
    assert result.verdict is Verdict.UNSUPPORTED_ANSWER, result.explanation
    assert unsupported_texts(result) == ["Spray penetrating oil on rusty wheel studs and wait ten minutes."]


def test_a_changed_number_is_unsupported_although_every_word_matches(embedder) -> None:
    result = score(embedder, "Mount the spare tire and tighten the lug nuts to 95 Nm in a star pattern.")
    assert result.verdict is not Verdict.GROUNDED
    (claim,) = result.unsupported_claims
    # the aligned sentence states the same torque otherwise: a contradiction, not merely a missing number
    assert claim.outcome is ClaimOutcome.CONTRADICTED and claim.conflicts == ("number: 95 nm vs 120 nm",)
    assert claim.missing_numbers == ("95 nm",)
    assert score(embedder, "Tighten the lug nuts to 120 Nm in a star pattern.").verdict is Verdict.GROUNDED


def test_a_changed_name_is_unsupported(embedder) -> None:
    document = "The Ecobasic concept car was designed by Fiat's Centro Stile under Roberto Giolito and shown in Bologna in 2000."
    question = "Who designed the Ecobasic?"
    right = score(embedder, "The Ecobasic was designed by Fiat's Centro Stile under Roberto Giolito.", [document], question=question)
    wrong = score(embedder, "The Ecobasic was designed by Fiat's Centro Stile under Marcello Gandini.", [document], question=question)
    assert right.verdict is Verdict.GROUNDED, right.explanation
    (claim,) = wrong.unsupported_claims
    assert claim.outcome is ClaimOutcome.CONTRADICTED and "gandini" in claim.missing_names
    assert claim.conflicts[0].startswith("name: gandini vs ")


def test_a_hedge_that_answers_nothing_is_a_refusal(embedder) -> None:
    result = score(embedder, "It depends on your car. Refer to your vehicle's owner's manual or contact your dealer.")
    assert result.verdict is Verdict.REFUSAL, result.explanation
    # advice after a real answer is not a refusal
    mixed = score(embedder, "Loosen the lug nuts a half turn before raising the vehicle. Refer to your owner's manual for details.")
    assert mixed.verdict is not Verdict.REFUSAL


def test_support_past_the_first_256_wordpieces_of_a_long_document_is_found(embedder) -> None:
    filler = " ".join(
        f"Section {i} describes the infotainment settings, the clock, the radio presets and the paired phones in detail."
        for i in range(30)
    )
    long_document = f"{filler} To reset the tire pressure monitor, hold the TPMS button until the light blinks three times."
    answer = "To reset the tire pressure monitor, hold the TPMS button until the light blinks three times."
    assert len(long_document.split()) > 400  # far past MiniLM's 256-wordpiece window
    result = score(embedder, answer, [long_document], question="How do I reset the tire pressure monitor?")
    assert result.verdict is Verdict.GROUNDED, result.explanation
    (claim,) = result.claims
    assert claim.document == 0 and claim.passage_start is not None and claim.passage_start > 0
    assert answer in long_document[claim.passage_start:claim.passage_end]
    # The document-level score sees it too: higher than what the embedder makes of the whole (truncated) document.
    truncated = float(embedder.embed([long_document])[0] @ embedder.embed([answer])[0])
    assert result.scores.ard is not None and result.scores.ard > max(truncated + 0.2, policy().thresholds.ard)


# --------------------------------------------------------------------------------------------------------------
# with supporting content: SDRD and SDA claim by claim
# --------------------------------------------------------------------------------------------------------------


def test_support_partly_written_by_the_model_is_caught(embedder) -> None:
    supporting = ("Loosen the lug nuts a half turn before raising the vehicle. Raise the vehicle with the jack until the tire clears "
                  "the ground. Most tire shops also recommend replacing the valve stem whenever a tire is changed.")
    answer = "Loosen the lug nuts, raise the vehicle with the jack, and replace the valve stem."
    result = score(embedder, answer, supporting=supporting)
    assert result.verdict in (Verdict.UNSUPPORTED_ANSWER, Verdict.PARAMETRIC), result.explanation
    assert [c.text for c in result.claims if c.of == "supporting" and c.supported is False] == [
        "Most tire shops also recommend replacing the valve stem whenever a tire is changed."
    ]


def test_thesis_example_one_keeps_every_claim(embedder) -> None:
    from ragtap.demo.cases import thesis_cases

    case = thesis_cases()[0]
    result = score(embedder, case.answer, list(case.retrieved), supporting=case.supporting, question=case.question)
    assert result.verdict is Verdict.GROUNDED
    assert all(c.supported for c in result.claims)


# --------------------------------------------------------------------------------------------------------------
# the pieces
# --------------------------------------------------------------------------------------------------------------


def test_claims_are_sentences_and_list_items_with_offsets() -> None:
    text = "Steps:\n1. Loosen the nuts. Then lift it.\n- Use jack stands.\n2) Remove the wheel."
    claims = split_claims(text)
    assert [c.text for c in claims] == ["Steps:", "Loosen the nuts.", "Then lift it.", "Use jack stands.", "Remove the wheel."]
    assert all(text[c.start:c.end] == c.text for c in claims)


def test_passages_overlap_and_short_documents_stay_whole() -> None:
    assert [p.text for p in split_passages("One short document.", 3)] == ["One short document."]
    document = " ".join(f"Sentence {i} has exactly seven words here." for i in range(40))
    passages = split_passages(document, 0, max_words=50)
    assert len(passages) > 5 and all(len(p.text.split()) <= 50 for p in passages)
    assert all(document[p.start:p.end] == p.text for p in passages)
    for before, after in zip(passages, passages[1:]):
        assert after.start < before.end  # each passage repeats the last sentence of the one before


def test_lexical_evidence_numbers_and_names() -> None:
    vocabulary = DocumentVocabulary.of(["Tighten the lug nuts to 1,200 rpm with the Mopar tool."])
    evidence = lexical_evidence("Tighten the nut to 1200 rpm using a Bosch tool.", vocabulary)
    assert evidence.missing_numbers == () and evidence.missing_names == ("bosch",)
    assert 0.5 < evidence.precision < 1.0
    assert [(q.value, q.slot) for q in quantities("2.5 L and 10% at 3,000 rpm.")] == [(2.5, "l"), (10.0, "%"), (3000.0, "rpm")]


def test_thresholds_decide_and_rejudge_without_embedding() -> None:
    strict = ClaimThresholds(lexical_alone=0.9, similarity=0.95, lexical=0.8, similarity_with_lexical=0.9)
    assert decide(0.6, 0.2, ClaimThresholds()) == (True, "lexical")
    assert decide(0.6, 0.2, strict) == (False, "no_evidence")
    assert decide(0.1, 0.8, ClaimThresholds()) == (True, "similar")
    # words scattered over the documents (little of them in the aligned sentence window) need some cosine too
    assert decide(0.6, 0.2, ClaimThresholds(), aligned=0.1) == (False, "no_evidence")
    assert decide(0.40, 0.65, ClaimThresholds(), aligned=0.1) == (True, "lexical_and_similar")
    assert decide(0.36, 0.55, ClaimThresholds()) == (False, "no_evidence")


def test_rejudge_keeps_number_rule(embedder) -> None:
    result = score(embedder, "Tighten the lug nuts to 95 Nm.")
    (claim,) = result.claims
    assert rejudge(claim, ClaimThresholds(lexical_alone=0.0)).supported is False


def test_claims_in_score_output(embedder) -> None:
    item = Interaction(question=QUESTION, documents=(Document(MANUAL),), answer="Tighten the lug nuts to 95 Nm.")
    record = output_record(item, assess_batch([item], embedder, policy())[0])
    assert record["unsupported_claims"] == 1
    (claim,) = record["claims"]
    assert claim["supported"] is False and claim["outcome"] == "contradicted" and claim["of"] == "answer"
    assert claim["conflicts"] == ["number: 95 nm vs 120 nm"] and record["contradicted_claims"] == 1
    assert (claim["start"], claim["end"]) == (0, len(item.answer))
    evidence = claim["evidence"]  # the manual's sentence the claim was compared with
    assert "120 Nm" in MANUAL[evidence["start"]:evidence["end"]] and evidence["document_index"] == 0


@pytest.mark.parametrize("answer", ["Yes.", "1066"])
def test_answers_without_a_checkable_claim_use_the_whole_text_rule(embedder, answer: str) -> None:
    result = score(embedder, answer, ["The battle of Hastings was fought in 1066. Yes, it was."], question="When was Hastings?")
    assert all(c.supported is None for c in result.claims)
    assert result.verdict is Verdict.GROUNDED


# --------------------------------------------------------------------------------------------------------------
# the unsupported claims reach the app's debug headers, Prometheus and OpenTelemetry (text only under capture)
# --------------------------------------------------------------------------------------------------------------

INVENTED = "Always have the tire balanced by a technician and rotate all four tires every 5,000 miles afterwards."
MIXED_ANSWER = f"Loosen the lug nuts a half turn before raising the vehicle. {INVENTED}"


async def test_debug_header_names_unsupported_claims_by_offsets_over_http(start_proxy) -> None:
    from conftest import fixed, json_content

    supporting = "Loosen the lug nuts a half turn before raising the vehicle."
    proxy = await start_proxy(fixed(json_content(MIXED_ANSWER, supporting)))
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}],
        extra_body={"ragtap": {"question": QUESTION, "documents": [MANUAL]}}, extra_headers={"x-ragtap-debug": "1"},
    )
    assert raw.parse().choices[0].message.content == MIXED_ANSWER
    assert raw.headers["x-ragtap-verdict"] == "unsupported_answer"
    start = MIXED_ANSWER.index(INVENTED)  # character offsets in the answer, as JSON (issue 22; it was a count)
    assert json.loads(raw.headers["x-ragtap-unsupported-claims"]) == [[start, start + len(INVENTED)]]


@pytest.mark.parametrize("capture", [False, True])
def test_claims_in_prometheus_and_otel(embedder, capture: bool) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtap.exporters.otel import OtelExporter
    from ragtap.exporters.prometheus import PrometheusExporter
    from ragtap.exporters.settings import OtelSettings

    item = Interaction(question=QUESTION, documents=(Document(MANUAL),), answer=MIXED_ANSWER, model="m")
    assessment = assess_batch([item], embedder, policy())[0]
    prometheus = PrometheusExporter()
    prometheus.interaction_scored(item, assessment, 0.1)
    text = prometheus.render()[0].decode()
    assert 'ragtap_unsupported_claims_total{model="m"} 1.0' in text and 'ragtap_claims_judged_total{model="m"} 2.0' in text

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OtelExporter(OtelSettings(enabled=True, capture_content=capture), tracer_provider=provider).interaction_scored(item, assessment, 0.1)
    (span,) = spans.get_finished_spans()
    (event,) = [e for e in span.events if e.attributes.get("gen_ai.evaluation.name") == "ragtap.claims"]
    assert event.attributes["ragtap.claims.unsupported"] == 1 and event.attributes["gen_ai.evaluation.score.value"] == 0.5
    start = MIXED_ANSWER.index(INVENTED)
    assert tuple(event.attributes["ragtap.claims.unsupported_offsets"]) == (f"{start}-{start + len(INVENTED)}",)
    exported = str([dict(e.attributes) for e in span.events]) + str(dict(span.attributes))
    assert (INVENTED in exported) is capture  # answer text leaves only under content capture


async def test_a_document_bomb_is_answered_and_scored_within_the_limits(start_proxy, embedder) -> None:
    """Issue 13 #3: 30,000 documents in one request stalled scoring for minutes; the scored part is now bounded."""
    from conftest import fixed, json_content

    proxy = await start_proxy(fixed(json_content()))
    documents = [f"Document {i} says the lug nuts are tightened in a star pattern." for i in range(30_000)]
    documents[0] = "x" * 100_000  # and one huge document
    completion = await proxy.client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}],
        extra_body={"ragtap": {"question": QUESTION, "documents": documents}},
    )
    assert completion.choices[0].message.content  # the app's answer, as always
    interaction, assessment = await proxy.collector.assessment(timeout=20)
    assert len(interaction.documents) == 64 and len(interaction.documents[0].text) == 20_000
    assert set(interaction.truncated) == {"documents", "document_chars"}
    # Scored, not set aside: the verdict the scoring core gives for the bounded interaction (the supporting content,
    # about EC2, is not in the tyre documents while the answer follows it: parametric).
    assert interaction.unscored_reason is None and assessment.verdict is Verdict.PARAMETRIC
    again = assess_batch([interaction], embedder, policy())[0]
    assert again.verdict is assessment.verdict
    for metric in ("sdq", "sdrd", "sda", "qrd", "qa", "ard"):
        assert getattr(assessment.scores, metric) == pytest.approx(getattr(again.scores, metric), abs=1e-4), metric
    assert assessment.scores.attributed_document in range(64)  # one of the documents kept
