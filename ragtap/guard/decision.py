"""What the guard does with one assessed answer: does it trip a trigger, and what does the app receive then.

A whole reply trips the guard when its verdict is one of the configured `verdicts`, or when "contradicted" is
configured and the documents contradict one of its claims.  The claims acted on are the answer's unsupported
ones (not found or contradicted) for a verdict trigger, only the contradicted ones for "contradicted".

In a stream the guard sees one sentence at a time, never a verdict: a sentence trips it when the documents do not
state it and a verdict that such sentences make (`unsupported_answer`, `parametric`) is a trigger, or when they
contradict it and "contradicted" (or one of those verdicts) is a trigger.

`deliver` is the pure part: the action applied to the answer's text.  The outcome names what happened (a closed
set, the `outcome` label of `ragtap_guard_total`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.guard.settings import CONTRADICTED, GuardSettings
from ragtap.guard.strip import strip_claims
from ragtap.types import Assessment, ClaimOutcome, ClaimSupport

# What the app received (the first six), or why the answer was released unchanged without a decision (fail open).
PASSED = "passed"  # checked, nothing tripped: unchanged
ANNOTATED = "annotated"  # annotate: unchanged, the verdict attached
STRIPPED = "stripped"
BLOCKED = "blocked"
RETRIED = "retried"  # retry: the second answer passed and was delivered
UNLOCATED = "unlocated"  # tripped by the verdict, but no sentence to remove could be named: unchanged
TIMEOUT = "timeout"  # the check did not finish within the deadline
SCORER_ERROR = "scorer_error"  # the embedder or the scoring core failed
OVERLOAD = "overload"  # too many checks in flight: not even started
UNSCORABLE = "unscorable"  # the reply could not be split or scored (no documents, not our JSON, cut short...)
INCOMPLETE = "incomplete"  # the app went away before the guard finished
OUTCOMES: tuple[str, ...] = (PASSED, ANNOTATED, STRIPPED, BLOCKED, RETRIED, UNLOCATED, TIMEOUT, SCORER_ERROR, OVERLOAD, UNSCORABLE, INCOMPLETE)
FAILED_OPEN = frozenset({TIMEOUT, SCORER_ERROR, OVERLOAD, UNSCORABLE})

_NOT_FOUND_VERDICTS = frozenset({"unsupported_answer", "parametric"})


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str  # the verdict, or "contradicted"
    claims: tuple[ClaimSupport, ...]  # the answer's claims to act on


def trigger_of(assessment: Assessment, triggers: Sequence[str]) -> Trigger | None:
    verdict = assessment.verdict.value
    if verdict in triggers:
        return Trigger(verdict, assessment.unsupported_claims)
    if CONTRADICTED in triggers and assessment.contradicted_claims:
        return Trigger(CONTRADICTED, assessment.contradicted_claims)
    return None


def claim_trips(claim: ClaimSupport, triggers: Sequence[str]) -> bool:
    """A streamed sentence's check, against the triggers (see the module docstring)."""
    not_found_trigger = any(t in _NOT_FOUND_VERDICTS for t in triggers)
    if claim.outcome is ClaimOutcome.CONTRADICTED:
        return CONTRADICTED in triggers or not_found_trigger
    return claim.outcome is ClaimOutcome.NOT_FOUND and not_found_trigger


@dataclass(frozen=True, slots=True)
class Delivery:
    text: str  # what the app receives
    outcome: str
    trigger: str | None = None
    removed: int = 0  # claims stripped


def deliver(action: str, answer: str, assessment: Assessment, settings: GuardSettings) -> Delivery:
    """Apply `action` (annotate, strip or block: retry's second step is the caller's) to an assessed answer."""
    if action == "annotate":
        return Delivery(answer, ANNOTATED)
    trigger = trigger_of(assessment, settings.verdicts)
    if trigger is None:
        return Delivery(answer, PASSED)
    if action == "block":
        return Delivery(settings.block_message, BLOCKED, trigger.name)
    stripped = strip_claims(answer, trigger.claims, settings.strip_note)
    if stripped.removed == 0:
        return Delivery(answer, UNLOCATED, trigger.name)
    if stripped.empty:  # every claim went: nothing left to deliver but the block message
        return Delivery(settings.block_message, BLOCKED, trigger.name, stripped.removed)
    return Delivery(stripped.text, STRIPPED, trigger.name, stripped.removed)
