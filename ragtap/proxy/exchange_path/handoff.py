"""The last step: hand the interaction to scoring, after the response (or before it, when asked to wait).

The order for one exchange (`after_response`, on the next loop turn after the response is returned): token
counts are settled, then `exchange_finished`, then the interaction goes to scoring, then `interaction_scored`.
`settle_whole_reply` is seam (a) (`seams.py`): the place where a step may await the assessment of a whole reply
and replace its answer before the body is built; the debug headers use the same single assessment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragtap.cost import settle_overhead
from ragtap.proxy.exchange_path.read import Exchange
from ragtap.proxy.exchange_path.seams import WholeReply
from ragtap.proxy.requestlog import log_exchange
from ragtap.split.stream import StreamResult
from ragtap.tokens import count_tokens
from ragtap.types import Assessment, ClaimSupport, Interaction


def interaction_for(exchange: Exchange, answer: str | None, supporting: str | None, reason: str | None) -> Interaction:
    context, record = exchange.context, exchange.record
    assert context is not None, "only a RAG exchange is scored"
    return Interaction(
        question=context.question,
        documents=context.documents,
        answer=answer,
        supporting=supporting,
        id=record.response_id,
        model=record.response_model or record.request_model,
        unscored_reason=reason,
        exchange=record,
    )


def score_later(exchange: Exchange, answer: str | None, supporting: str | None, reason: str | None) -> None:
    """Scored after the response, when the exchange is RAG (`after_response`) and was not scored before it
    (`assess_now`, `assess_split`); nothing to do otherwise."""
    if exchange.context is not None and not exchange.assessed:
        exchange.pending = interaction_for(exchange, answer, supporting, reason)


def after_response(exchange: Exchange) -> None:
    """Settle the token counts, then run the exporters' exchange hooks, then hand the interaction to scoring: in
    that order, so that every hook (and the scored interaction's exporters) sees the final record."""
    state, record, interaction = exchange.state, exchange.record, exchange.pending
    if interaction is not None and interaction.supporting and record.supporting_tokens is None:
        record.supporting_tokens = count_tokens(interaction.supporting, interaction.model)
    if interaction is not None and record.output_text is None:  # (a step that replaced the answer set it already)
        record.output_text = interaction.answer
    if state.prices is not None:
        settle_overhead(record, state.prices)
    state.exporter.exchange_finished(record)
    log_exchange(record)
    if exchange.scored is not None:  # assessed before the response (the guard): exported now, in the same order
        state.exporter.interaction_scored(*exchange.scored)
    elif interaction is not None and state.scoring is not None:
        state.scoring.submit(interaction)


async def assess_now(exchange: Exchange, timeout: float) -> Assessment | None:
    """Score the pending interaction before the response, once (a second call returns the same assessment);
    None when scoring is off, full or slower than `timeout`.  The interaction is then not scored again later."""
    if exchange.assessed:
        return exchange.assessment
    exchange.assessed = True
    interaction, state = exchange.pending, exchange.state
    if interaction is None or state.scoring is None:
        return None
    exchange.pending = None
    if interaction.supporting and exchange.record.supporting_tokens is None:  # as `after_response` would
        exchange.record.supporting_tokens = count_tokens(interaction.supporting, interaction.model)
    exchange.assessment = await state.scoring.score_now(interaction, timeout)
    return exchange.assessment


async def assess_split(exchange: Exchange, result: StreamResult, timeout: float) -> Assessment | None:
    """For an answer gate (seam (b)) at its release: score the stream's split answer now, once; the stream is then
    not scored again when it ends.  None when the exchange is not RAG, or as `assess_now`."""
    if exchange.context is None:
        return None
    if not exchange.assessed:
        exchange.pending = interaction_for(exchange, result.answer, result.supporting, result.unscored_reason)
    return await assess_now(exchange, timeout)


async def settle_whole_reply(exchange: Exchange, reply: WholeReply, headers: Any) -> None:
    """A split whole reply, before its body is built: the interaction for scoring, seam (a)'s steps, and the
    debug headers when the app asked for them (scored now, bounded by `debug_wait_s`)."""
    split = reply.split
    exchange.pending = interaction_for(exchange, split.answer, split.supporting, split.unscored_reason)
    state = exchange.state
    reply.headers = headers
    for step in state.steps.whole_reply:
        await step.on_whole_reply(exchange, reply)
    if reply.replaced is not None:
        exchange.record.output_text = reply.replaced
    if state.config.server.debug_headers or exchange.request.headers.get("x-ragtap-debug") == "1":
        assessment = await assess_now(exchange, state.config.server.debug_wait_s)
        add_debug_headers(headers, assessment, split.unscored_reason)


def claim_offsets(claims: Sequence[ClaimSupport]) -> str:
    """Claims as a header value: their character offsets in the answer, as JSON ([[start, end], ...])."""
    return json.dumps([[c.start, c.end] for c in claims], separators=(",", ":"))


def add_debug_headers(headers: Any, assessment: Assessment | None, reason: str | None) -> None:
    if assessment is None:
        headers["x-ragtap-verdict"] = "unscored"
        headers["x-ragtap-unscored-reason"] = reason or "scoring_unavailable"
        return
    headers["x-ragtap-verdict"] = assessment.verdict.value
    headers["x-ragtap-poor-retrieval"] = str(assessment.poor_retrieval).lower()
    scores = {k: round(v, 4) for k, v in assessment.scores.as_dict().items() if v is not None}
    headers["x-ragtap-scores"] = json.dumps(scores, separators=(",", ":"))
    headers["x-ragtap-unsupported-claims"] = claim_offsets(assessment.unsupported_claims)
    if reason:
        headers["x-ragtap-unscored-reason"] = reason
