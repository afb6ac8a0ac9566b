"""The guard on a whole (non-streamed) reply: wait for the assessment, then annotate, strip, block or retry.

The relay supplies two steps it alone can take: `assess` (score this answer text of this request, within the
deadline) and, for `retry`, `retry` (ask the upstream once more with the stricter instruction and return the
second reply's answer).  Whatever fails on the way -- the check, the deadline, the second request -- leaves the
app with an answer it would have had: the first one unchanged (a failed check), or, when the first answer is
known to trip the guard but the retry could not be used, the fallback applied to the first answer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ragtap.exchange import GuardRecord
from ragtap.guard.checks import Checked
from ragtap.guard.decision import ANNOTATED, PASSED, RETRIED, UNSCORABLE, Delivery, deliver, trigger_of
from ragtap.guard.settings import GuardSettings
from ragtap.types import Assessment, Verdict

Assess = Callable[[str], Awaitable[Checked[Assessment]]]


@dataclass(frozen=True, slots=True)
class SecondAnswer:
    """The retry's reply, split: its answer, and how to assess it (the relay knows the request)."""

    answer: str
    assess: Callable[[], Awaitable[Checked[Assessment]]]


Retry = Callable[[], Awaitable[SecondAnswer | None]]


@dataclass(frozen=True, slots=True)
class GuardedReply:
    text: str  # what the app receives
    record: GuardRecord
    assessment: Assessment | None  # the first answer's (None when the check failed)
    second: bool = False  # the app receives the retry's reply (its id, usage, finish reason go with the text)


def _usable(checked: Checked[Assessment]) -> str | None:
    """Why an assessment cannot decide anything (a failure, or an unscored reply), else None."""
    if checked.failure is not None or checked.value is None:
        return checked.failure or "scorer_error"
    return UNSCORABLE if checked.value.verdict is Verdict.UNSCORED else None


async def guard_reply(action: str, answer: str, assess: Assess, settings: GuardSettings, retry: Retry | None = None) -> GuardedReply:
    started = time.perf_counter()

    def done(delivery: Delivery, assessment: Assessment | None, *, second: bool = False, retried: str | None = None) -> GuardedReply:
        record = GuardRecord(
            action, delivery.outcome, delivery.trigger, answer, None if delivery.text == answer else delivery.text,
            removed_claims=delivery.removed, retry=retried, waited_ms=round((time.perf_counter() - started) * 1000.0, 3),
        )
        return GuardedReply(delivery.text, record, assessment, second)

    first = await assess(answer)
    failure = _usable(first)
    if failure is not None:
        return done(Delivery(answer, failure), first.value)
    assessment = first.value
    assert assessment is not None
    if action != "retry":
        return done(deliver(action, answer, assessment, settings), assessment)
    trigger = trigger_of(assessment, settings.verdicts)
    if trigger is None:
        return done(Delivery(answer, PASSED), assessment)
    fallback = settings.retry_fallback
    reply = await retry() if retry is not None else None
    if reply is None:  # the second request failed or could not be split: the first answer, made safe
        return done(deliver(fallback, answer, assessment, settings), assessment, retried="error")
    second = await reply.assess()
    failure = _usable(second)
    if failure is not None:
        return done(deliver(fallback, answer, assessment, settings), assessment, retried=failure)
    assert second.value is not None
    if trigger_of(second.value, settings.verdicts) is None:
        return done(Delivery(reply.answer, RETRIED, trigger.name), assessment, second=True, retried="passed")
    outcome = deliver(fallback, reply.answer, second.value, settings)
    return done(Delivery(outcome.text, outcome.outcome, trigger.name, outcome.removed), assessment, second=True, retried="failed")


def annotation(assessment: Assessment | None, record: GuardRecord) -> dict[str, object]:
    """The verdict as the response carries it (headers and, when asked for, the body's `ragtap` object)."""
    out: dict[str, object] = {"guard": record.action, "outcome": record.outcome}
    if assessment is not None:
        out["verdict"] = assessment.verdict.value
        out["unsupported_claims"] = [[c.start, c.end] for c in assessment.unsupported_claims]
        out["contradicted_claims"] = [[c.start, c.end] for c in assessment.contradicted_claims]
    if record.outcome == ANNOTATED or assessment is None:
        return out
    out["changed"] = record.delivered_answer is not None
    return out
