"""The JSON-lines interaction format, read by `ragtap score`/`ragtap judge` and written by them and the proxy log.

Input lines hold `question`, `documents` (strings or {"id", "text"} objects; `retrieved` is accepted, as in the
thesis examples), `answer`, optionally `supporting` (or `supporting_content`) and `id`.  Output lines keep the
input's fields and add `scores`, `attribution`, `verdict`, `poor_retrieval`, `explanation`, `unsupported_claims`
and `claims` (each claim with its offsets, verdict and evidence: `claim_fields`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ragtap.types import Assessment, ClaimSupport, Document, Interaction


class RecordError(ValueError):
    """A line that is not a valid interaction; the message names the line and the problem."""


def _documents(value: Any, where: str) -> tuple[Document, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (Document(value),)
    if not isinstance(value, list):
        raise RecordError(f"{where}: 'documents' must be a list of strings or {{id, text}} objects")
    docs = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            docs.append(Document(item))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            docs.append(Document(item["text"], None if item.get("id") is None else str(item["id"])))
        else:
            raise RecordError(f"{where}: document {i} must be a string or an object with a 'text' string")
    return tuple(docs)


def interaction_from_record(record: dict[str, Any], where: str = "record") -> Interaction:
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected a JSON object")
    question = record.get("question")
    if not isinstance(question, str):
        raise RecordError(f"{where}: 'question' must be a string")
    documents = _documents(record.get("documents", record.get("retrieved")), where)
    supporting = record.get("supporting", record.get("supporting_content"))
    answer = record.get("answer")
    for name, value in (("answer", answer), ("supporting", supporting)):
        if value is not None and not isinstance(value, str):
            raise RecordError(f"{where}: '{name}' must be a string")
    rid = record.get("id")
    return Interaction(
        question=question,
        documents=documents,
        answer=answer,
        supporting=supporting,
        id=None if rid is None else str(rid),
        model=record.get("model") if isinstance(record.get("model"), str) else None,
        record=record,
    )


def read_interactions(path: str | Path) -> Iterator[Interaction]:
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise RecordError(f"{where}: not valid JSON ({error})") from error
            yield interaction_from_record(record, where)


def claim_fields(claim: ClaimSupport) -> dict[str, Any]:
    """One claim as written to JSONL and stored: offsets into the answer (or the support: `of`), the verdict on
    it, and its evidence (best passage: document index and character offsets in that document)."""
    return {
        "of": claim.of,
        "text": claim.text,
        "start": claim.start,
        "end": claim.end,
        "supported": claim.supported,
        "outcome": claim.outcome.value,
        "reason": claim.reason,
        "similarity": None if claim.similarity is None else round(claim.similarity, 4),
        "lexical_precision": round(claim.lexical_precision, 4),
        "document_index": claim.document,
        "passage": None if claim.passage_start is None else [claim.passage_start, claim.passage_end],
        "missing_numbers": list(claim.missing_numbers),
        "missing_names": list(claim.missing_names),
        "conflicts": list(claim.conflicts),
        "evidence": None if claim.evidence_document is None else {
            "document_index": claim.evidence_document, "start": claim.evidence_start, "end": claim.evidence_end},
    }


def assessment_fields(assessment: Assessment) -> dict[str, Any]:
    scores = {name: (None if value is None else round(value, 6)) for name, value in assessment.scores.as_dict().items()}
    return {
        "scores": scores,
        "passed": assessment.passed,
        "attribution": {"document_index": assessment.scores.attributed_document},
        "verdict": assessment.verdict.value,
        "poor_retrieval": assessment.poor_retrieval,
        "explanation": assessment.explanation,
        "unsupported_claims": len(assessment.unsupported_claims),
        "contradicted_claims": len(assessment.contradicted_claims),
        "claims": [claim_fields(c) for c in assessment.claims],
    }


def base_record(interaction: Interaction) -> dict[str, Any]:
    """The input line the interaction was read from, or (from the proxy) its texts in the input format."""
    base = interaction.record
    if base is None:
        base = {
            "id": interaction.id,
            "model": interaction.model,
            "question": interaction.question,
            "documents": [{"id": d.id, "text": d.text} if d.id else d.text for d in interaction.documents],
            "supporting": interaction.supporting,
            "answer": interaction.answer,
        }
    if interaction.unscored_reason and "unscored_reason" not in base:
        base = {**base, "unscored_reason": interaction.unscored_reason}
    return base


def output_record(interaction: Interaction, assessment: Assessment) -> dict[str, Any]:
    """The input line (when there was one) plus the assessment, and what was cut to the scoring limits."""
    truncated = {"truncated": list(interaction.truncated)} if interaction.truncated else {}
    return {**base_record(interaction), **assessment_fields(assessment), **truncated}
