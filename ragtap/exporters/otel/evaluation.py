"""The evaluation results of one scored interaction: the attributes of each `gen_ai.evaluation.result` (one per
score, the verdict, the claims, the retrieval) and of the `evaluate ragtap` span, with the question, documents and
answer only under content capture.  `OtelExporter.interaction_scored` emits them."""

from __future__ import annotations

import json
from typing import Any

from ragtap.exchange import ExchangeRecord
from ragtap.exporters.otel.attributes import _verdict_label, capped_text
from ragtap.exporters.semconv import (
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RETRIEVAL_DOCUMENTS,
    GEN_AI_RETRIEVAL_QUERY_TEXT,
)
from ragtap.exporters.settings import OtelSettings
from ragtap.privacy import NO_REDACTION, Redactor
from ragtap.types import METRICS, Assessment, Interaction

EVALUATE_SPAN_NAME = "evaluate ragtap"

MAX_CAPTURED_DOCUMENTS = 50


def _evaluation_attributes(settings: OtelSettings, interaction: Interaction, assessment: Assessment,
                           response_id: str | None, redactor: Redactor = NO_REDACTION) -> dict[str, Any]:
    """The `evaluate ragtap` span's attributes: the verdict and scores (for backends that do not index events),
    and the content only under capture."""
    exchange = interaction.exchange
    model = interaction.model or (exchange.request_model if exchange is not None else None)
    attrs: dict[str, Any] = {"ragtap.verdict": _verdict_label(assessment)}
    if model:
        attrs[GEN_AI_REQUEST_MODEL] = model
    if response_id:
        attrs[GEN_AI_RESPONSE_ID] = response_id
    if assessment.poor_retrieval is not None:
        attrs["ragtap.poor_retrieval"] = bool(assessment.poor_retrieval)
    if assessment.scores.attributed_document is not None:
        attrs["ragtap.attributed_document"] = int(assessment.scores.attributed_document)
    if exchange is not None and exchange.supporting_tokens is not None:
        attrs["ragtap.supporting_tokens"] = int(exchange.supporting_tokens)
    if interaction.unscored_reason:
        attrs["ragtap.unscored_reason"] = interaction.unscored_reason
    if interaction.id:
        attrs["ragtap.interaction_id"] = interaction.id
    for metric in METRICS:
        value = getattr(assessment.scores, metric, None)
        if value is not None:
            attrs[f"ragtap.score.{metric}"] = float(value)
    if settings.capture_content:
        attrs.update(_content_attributes(settings, interaction, assessment, exchange, redactor))
    return attrs


def _evaluation_results(settings: OtelSettings, assessment: Assessment, common: dict[str, Any],
                        redactor: Redactor = NO_REDACTION) -> list[dict[str, Any]]:
    """The attributes of each `gen_ai.evaluation.result`: one per score, then the verdict, the claims and the
    retrieval."""
    results: list[dict[str, Any]] = []
    for metric in METRICS:
        value = getattr(assessment.scores, metric, None)
        if value is None:
            continue
        event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: f"ragtap.{metric}",
                                 GEN_AI_EVALUATION_SCORE_VALUE: float(value), **common}
        if metric in assessment.passed:
            event[GEN_AI_EVALUATION_SCORE_LABEL] = "pass" if assessment.passed[metric] else "fail"
        results.append(event)
    verdict_event: dict[str, Any] = {GEN_AI_EVALUATION_NAME: "ragtap.verdict",
                                     GEN_AI_EVALUATION_SCORE_LABEL: _verdict_label(assessment), **common}
    if assessment.explanation:
        verdict_event[GEN_AI_EVALUATION_EXPLANATION] = assessment.explanation
    results.append(verdict_event)
    claims = _claims_result(settings, assessment, common, redactor)
    if claims is not None:
        results.append(claims)
    if assessment.poor_retrieval is not None:
        results.append({GEN_AI_EVALUATION_NAME: "ragtap.retrieval",
                        GEN_AI_EVALUATION_SCORE_LABEL: "poor" if assessment.poor_retrieval else "ok", **common})
    return results


def _claims_result(settings: OtelSettings, assessment: Assessment, common: dict[str, Any],
                   redactor: Redactor = NO_REDACTION) -> dict[str, Any] | None:
    """`ragtap.claims`: the share of the answer's judged claims that the evidence supports, the unsupported and
    contradicted counts with their offsets, and (only under content capture: claims are answer text) each
    unsupported claim with its outcome and, when contradicted, what the evidence says otherwise."""
    judged = [c for c in assessment.claims if c.of == "answer" and c.supported is not None]
    if not judged:
        return None
    unsupported = assessment.unsupported_claims
    event: dict[str, Any] = {
        GEN_AI_EVALUATION_NAME: "ragtap.claims",
        GEN_AI_EVALUATION_SCORE_VALUE: 1.0 - len(unsupported) / len(judged),
        GEN_AI_EVALUATION_SCORE_LABEL: "fail" if unsupported else "pass",
        "ragtap.claims.judged": len(judged),
        "ragtap.claims.unsupported": len(unsupported),
        "ragtap.claims.unsupported_offsets": [f"{c.start}-{c.end}" for c in unsupported],
        "ragtap.claims.contradicted": len(assessment.contradicted_claims),
        "ragtap.claims.contradicted_offsets": [f"{c.start}-{c.end}" for c in assessment.contradicted_claims],
        **common,
    }
    if settings.capture_content:
        capped = capped_text(redactor, max(0, int(settings.content_max_chars)))
        event["ragtap.claims.unsupported_text"] = json.dumps(
            [{"text": capped(c.text), "start": c.start, "end": c.end, "outcome": c.outcome.value, "reason": c.reason,
              "conflicts": [capped(x) for x in c.conflicts]} for c in unsupported], ensure_ascii=False
        )
    return event


def _content_attributes(settings: OtelSettings, interaction: Interaction, assessment: Assessment,
                        exchange: ExchangeRecord | None, redactor: Redactor = NO_REDACTION) -> dict[str, Any]:
    capped = capped_text(redactor, max(0, int(settings.content_max_chars)))

    attrs: dict[str, Any] = {GEN_AI_RETRIEVAL_QUERY_TEXT: capped(interaction.question)}
    documents = [{"id": doc.id if doc.id is not None else str(i), "content": capped(doc.text)}
                 for i, doc in enumerate(interaction.documents[:MAX_CAPTURED_DOCUMENTS])]
    attrs[GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(documents, ensure_ascii=False)
    if interaction.supporting is not None:
        attrs["ragtap.supporting_content"] = capped(interaction.supporting)
    if interaction.answer is not None:
        finish = exchange.finish_reasons[0] if exchange is not None and exchange.finish_reasons else "stop"
        message = {"role": "assistant", "parts": [{"type": "text", "content": capped(interaction.answer)}],
                   "finish_reason": finish}
        attrs[GEN_AI_OUTPUT_MESSAGES] = json.dumps([message], ensure_ascii=False)
    if assessment.refusal_phrase:
        attrs["ragtap.refusal_phrase"] = capped(assessment.refusal_phrase)
    return attrs
