"""The guard (ragtap/guard/, docs/guard.md) on the exchange path: a whole-reply step and a stream gate, for every
API shape on the path (chat completions, Responses, Messages).

Which action applies is decided per request (`requested_guard`: the `ragtap` field's `guard`, the
`x-ragtap-guard` header, else `[guard] action`); "off" costs one dictionary and one header lookup.  The checks run
in the guard's own lane (`ragtap.pipeline.guard_lane`), never on the event loop, each within `deadline_ms`.

- Whole replies (seam (a)): the reply is assessed in the lane; `guard_reply` decides; the app receives the
  result (for `retry`, the second reply's object when it is delivered, seam (c)).  The assessment is the one the
  exporters see (after the response, `Exchange.scored`) and the debug headers show: scored once.  The response
  says what was done: `x-ragtap-guard: <action>; outcome=<outcome>`, and the verdict headers (`x-ragtap-verdict`,
  `x-ragtap-unsupported-claims` / `x-ragtap-contradicted-claims` as JSON character offsets in the answer the
  model wrote); with `annotate_body`, the same in a `ragtap` object of the body.
- Streams (seam (b)): `annotate` passes the text and ends the stream with an SSE comment carrying the verdict
  (the whole reply assessed when it is complete); `strip` / `block` / `retry` hold sentences back until each is
  checked (`GuardGate`); the stream ends with a comment saying what was done.
Whatever fails is counted (`GuardRecord.outcome`) and releases the answer unchanged.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ragtap.exchange import GuardRecord
from ragtap.guard.checks import Checked
from ragtap.guard.decision import ANNOTATED, UNSCORABLE
from ragtap.guard.reply import SecondAnswer, annotation, guard_reply
from ragtap.guard.settings import HEADER, GuardRequest, GuardSettings, requested_guard
from ragtap.guard.stream import GuardGate
from ragtap.pipeline.guard_lane import GuardLane
from ragtap.prompts import prompt_text
from ragtap.proxy.exchange_path import Exchange, ExchangeSteps, WholeReply, claim_offsets, interaction_for
from ragtap.split.stream import StreamResult
from ragtap.types import Assessment, Interaction, Verdict

log = logging.getLogger("ragtap.guard")


def _comment(fields: dict[str, Any]) -> str:
    return "ragtap-guard " + json.dumps(fields, separators=(",", ":"))


@dataclass
class Guarding:
    settings: GuardSettings
    lane: GuardLane

    @property
    def deadline_s(self) -> float:
        return self.settings.deadline_ms / 1000.0

    def requested(self, exchange: Exchange) -> GuardRequest | None:
        """The action this exchange asked for, None when the guard is off for it (or it is not RAG)."""
        if exchange.context is None:
            return None
        field = exchange.body.get("ragtap") if exchange.body is not None else None
        header = exchange.request.headers.get(HEADER)
        if field is None and header is None and self.settings.action == "off":
            return None
        wanted = requested_guard(self.settings, field, header)
        if wanted.problem is not None:
            log.info("guard: ignored the request's guard setting (%s); %s applies", wanted.problem, wanted.action)
        return None if wanted.action == "off" else wanted

    def steps(self) -> ExchangeSteps:
        return ExchangeSteps(whole_reply=(self,), stream_gates=(self.open_gate,))

    async def assess(self, interaction: Interaction) -> Checked[Assessment]:
        return await self.lane.assess(interaction, self.deadline_s)

    # ------------------------------------------------------------------------------------- seam (a): whole replies
    async def on_whole_reply(self, exchange: Exchange, reply: WholeReply) -> None:
        wanted = self.requested(exchange)
        interaction = exchange.pending
        if wanted is None or interaction is None:
            return
        first: list[Checked[Assessment]] = []

        async def assess(answer: str) -> Checked[Assessment]:
            first.append(await self.assess(interaction))
            return first[0]

        second_reply: list[Any] = []

        async def retry() -> SecondAnswer | None:
            if exchange.ask_again is None:
                return None
            second = await exchange.ask_again(prompt_text(self.settings.retry_prompt))
            if second is None:
                return None
            second_reply.append(second)
            again = interaction_for(exchange, second.split.answer, second.split.supporting, second.split.unscored_reason)
            return SecondAnswer(second.split.answer, lambda: self.assess(again))

        result = await guard_reply(wanted.action, reply.answer, assess, self.settings, retry if wanted.action == "retry" else None)
        if result.second:
            reply.adopt(second_reply[0], result.text)
        elif result.text != reply.answer:
            reply.replace_answer(result.text)
        exchange.record.guard = result.record
        checked = first[0] if first else None
        if checked is not None and checked.value is not None:
            # Scored once: the debug headers show it, the exporters get it after the response (not scored again).
            exchange.assessed, exchange.assessment, exchange.pending = True, checked.value, None
            exchange.scored = (interaction, checked.value, checked.seconds)
        self._annotate(reply, wanted, result.record, checked.value if checked is not None else None)

    def _annotate(self, reply: WholeReply, wanted: GuardRequest, record: GuardRecord, assessment: Assessment | None) -> None:
        headers = reply.headers
        if headers is not None:
            headers[HEADER] = f"{record.action}; outcome={record.outcome}"
            if assessment is not None:
                headers["x-ragtap-verdict"] = assessment.verdict.value
                headers["x-ragtap-unsupported-claims"] = claim_offsets(assessment.unsupported_claims)
                headers["x-ragtap-contradicted-claims"] = claim_offsets(assessment.contradicted_claims)
        if wanted.annotate_body and reply.body is not None:
            reply.body["ragtap"] = annotation(assessment, record)

    # ------------------------------------------------------------------------------------- seam (b): streams
    def open_gate(self, exchange: Exchange) -> Any:
        wanted = self.requested(exchange)
        if wanted is None:
            return None
        if wanted.action == "annotate":
            return _AnnotateGate(self, exchange)
        assert exchange.context is not None
        evidence = self.lane.evidence(exchange.context.documents, exchange.context.question)  # embedded while the model writes

        async def check(claims):  # type: ignore[no-untyped-def]
            return await self.lane.check(evidence, claims, self.deadline_s)

        async def retry() -> str | None:
            if exchange.ask_again is None:
                return None
            second = await exchange.ask_again(prompt_text(self.settings.retry_prompt))
            return second.split.answer if second is not None and second.split.recovered else None

        return _StreamGate(GuardGate(wanted.action, self.settings, check, retry=retry), exchange)


class _StreamGate:
    """A `GuardGate` on one exchange: records what it did when the answer is released."""

    def __init__(self, gate: GuardGate, exchange: Exchange) -> None:
        self.gate = gate
        self.exchange = exchange
        self.comment: str | None = None

    @property
    def on_ready(self) -> Any:
        return self.gate.on_ready

    @on_ready.setter
    def on_ready(self, send: Any) -> None:
        self.gate.on_ready = send

    def feed(self, text: str) -> str:
        return self.gate.feed(text)

    def answer_complete(self) -> None:
        self.gate.answer_complete()

    def unscorable(self, reason: str) -> None:
        self.gate.unscorable(reason)

    def abandon(self) -> None:
        self.gate.abandon()
        self.exchange.record.guard = self.gate.record()  # outcome "incomplete"

    async def release(self, result: StreamResult) -> str:
        text = await self.gate.release(result)
        record = self.gate.record()
        self.exchange.record.guard = record
        self.exchange.record.output_text = self.gate.delivered_text
        self.comment = _comment({"guard": record.action, "outcome": record.outcome, "removed_claims": record.removed_claims})
        return text


class _AnnotateGate:
    """`annotate` on a stream: the text passes; the complete reply is assessed and the verdict is the last comment."""

    def __init__(self, guarding: Guarding, exchange: Exchange) -> None:
        self.guarding = guarding
        self.exchange = exchange
        self.comment: str | None = None

    def feed(self, text: str) -> str:
        return text

    async def release(self, result: StreamResult) -> str:
        exchange = self.exchange
        interaction = interaction_for(exchange, result.answer, result.supporting, result.unscored_reason)
        checked = await self.guarding.assess(interaction)
        assessment = checked.value
        if assessment is not None and assessment.verdict is Verdict.UNSCORED:
            outcome = UNSCORABLE
        else:
            outcome = checked.failure or ANNOTATED
        record = GuardRecord("annotate", outcome, original_answer=result.answer, waited_ms=round(checked.seconds * 1000.0, 3))
        exchange.record.guard = record
        fields: dict[str, Any] = {"guard": "annotate", "outcome": outcome}
        if assessment is not None:
            fields.update(verdict=assessment.verdict.value, unsupported_claims=json.loads(claim_offsets(assessment.unsupported_claims)),
                          contradicted_claims=json.loads(claim_offsets(assessment.contradicted_claims)))
            # Scored once: not again when the stream ends (`score_later` skips an assessed exchange).
            exchange.assessed, exchange.assessment, exchange.scored = True, assessment, (interaction, assessment, checked.seconds)
        self.comment = _comment(fields)
        return ""


