"""The online judge: which scored interactions the LLM judge sees, within a rate limit and a daily token budget.

Policy, applied in `OnlineJudge.interaction_scored` (an exporter hook: it runs after the cosine scoring, never on
the response path), in this order:

1. no answer                                           -> skip `no_answer`
2. cosine verdict `grounded`, and the sampling RNG says no (probability 1 - sample_rate) -> skip `sampled_out`
   (every other verdict, `unscored` with an answer included, is always a candidate: trigger `not_grounded`)
3. `max_in_flight` judgements already running          -> skip `busy`
4. today's budget cannot cover this judgement's estimate -> skip `budget_exhausted`
5. the token bucket lacks the judgement's calls        -> skip `rate_limited`
6. otherwise the judgement is scheduled as a background asyncio task; its estimate is reserved from the budget
   and replaced by the tokens actually used (`usage`) when it finishes.

Rate limit: a token bucket of `burst_calls` judge calls refilled at `calls_per_second`; a judgement takes all its
calls (4 for the three metrics) up front.  Budget: tokens per UTC day, reset at midnight UTC by an injectable
wall clock.  The estimate is an upper bound for a well-behaved server: UTF-8 bytes / 3 of every prompt (at least
one token per 3 bytes in every BPE vocabulary ragtap knows of) plus `max_tokens` per call for the completion
and once more for the statements fed into the verification prompt.  So spending never exceeds the budget unless
the server ignores `max_tokens`; skipped interactions are counted, never queued (a flood cannot build a backlog).

Results go to `exporter.interaction_judged(interaction, judgement)` (every exporter of the ExporterSet) and, when
given, to `JudgePrometheusMetrics`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragtap.exporters.base import Exporter
from ragtap.judge.ragas import ANSWER_RELEVANCE, CONTEXT_RELEVANCE, FAITHFULNESS, Judge, Judgement, prompt_messages
from ragtap.types import Assessment, Interaction, Verdict

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ragtap.embedding.base import Embedder
    from ragtap.exporters.judge import JudgePrometheusMetrics
    from ragtap.judge.settings import JudgeSettings

log = logging.getLogger("ragtap.judge")

DEFAULT_COMPLETION_ALLOWANCE = 1024  # tokens per call assumed when no max_tokens is sent


class TokenBucket:
    """`capacity` tokens, refilled continuously at `rate` per second of the (monotonic, injectable) clock."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = max(0.0, float(rate))
        self.capacity = max(0.0, float(capacity))
        self.clock = clock
        self.tokens = self.capacity
        self._last = clock()

    def _refill(self) -> None:
        now = self.clock()
        if now > self._last:
            self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        self._last = now

    def available(self) -> float:
        self._refill()
        return self.tokens

    def try_take(self, amount: float) -> bool:
        self._refill()
        if self.tokens + 1e-9 >= amount:
            self.tokens -= amount
            return True
        return False


class DailyBudget:
    """Tokens per UTC day (0 = unlimited).  `reserved` holds the estimates of judgements in flight."""

    def __init__(self, tokens_per_day: int, clock: Callable[[], float] = time.time) -> None:
        self.limit = max(0, int(tokens_per_day))
        self.clock = clock
        self.day = self._today()
        self.used = 0
        self.reserved = 0

    def _today(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.clock(), tz=dt.timezone.utc).date()

    def _roll(self) -> None:
        today = self._today()
        if today != self.day:
            self.day, self.used = today, 0  # reservations in flight carry over

    def can_cover(self, estimate: int) -> bool:
        self._roll()
        return self.limit == 0 or self.used + self.reserved + estimate <= self.limit

    def reserve(self, estimate: int) -> None:
        self._roll()
        self.reserved += estimate

    def settle(self, estimate: int, actual: int) -> None:
        self._roll()
        self.reserved = max(0, self.reserved - estimate)
        self.used += actual

    def remaining(self) -> float:
        self._roll()
        return float("inf") if self.limit == 0 else max(0, self.limit - self.used - self.reserved)


@dataclass(frozen=True, slots=True)
class Decision:
    judge: bool
    reason: str  # trigger ("not_grounded" | "sampled") when judged, else the skip reason
    estimate: int = 0


class JudgePolicy:
    def __init__(
        self,
        *,
        sample_rate: float = 0.01,
        calls_per_second: float = 1.0,
        burst_calls: int = 16,
        daily_token_budget: int = 2_000_000,
        max_in_flight: int = 8,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sample_rate = min(1.0, max(0.0, float(sample_rate)))
        self.rng = rng if rng is not None else random.Random()
        self.bucket = TokenBucket(calls_per_second, burst_calls, monotonic)
        self.budget = DailyBudget(daily_token_budget, clock)
        self.max_in_flight = max(1, int(max_in_flight))
        self.in_flight = 0

    def decide(self, verdict: Verdict | str, has_answer: bool, calls: int, estimate: int | Callable[[], int]) -> Decision:
        """Whether to judge now; a positive decision takes the calls from the bucket, reserves the estimate and
        counts the judgement in flight until `finished(decision, actual_tokens)`.  `estimate` may be a function,
        called only for a candidate (so sampled-out interactions cost no prompt rendering)."""
        if not has_answer:
            return Decision(False, "no_answer")
        value = verdict.value if isinstance(verdict, Verdict) else str(verdict)
        if value == Verdict.GROUNDED.value:
            if not (self.rng.random() < self.sample_rate):
                return Decision(False, "sampled_out")
            trigger = "sampled"
        else:
            trigger = "not_grounded"
        if self.in_flight >= self.max_in_flight:
            return Decision(False, "busy")
        if callable(estimate):
            estimate = int(estimate())
        if not self.budget.can_cover(estimate):
            return Decision(False, "budget_exhausted")
        if not self.bucket.try_take(calls):
            return Decision(False, "rate_limited")
        self.budget.reserve(estimate)
        self.in_flight += 1
        return Decision(True, trigger, estimate)

    def finished(self, decision: Decision, actual_tokens: int) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self.budget.settle(decision.estimate, actual_tokens)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def estimate_tokens(judge: Judge, question: str, contexts: Sequence[str], answer: str, max_tokens: int | None) -> int:
    """An upper bound on the tokens one judgement spends (see the module docstring)."""
    completion = max_tokens or DEFAULT_COMPLETION_ALLOWANCE
    context = "\n\n".join(contexts)
    total_bytes = 0
    calls = 0
    if FAITHFULNESS in judge.metrics:
        total_bytes += sum(map(_bytes, prompt_messages("ragas_statements", question=question, answer=answer)))
        total_bytes += sum(map(_bytes, prompt_messages("ragas_verify", context=context, statements="")))
        calls += 2
        total_bytes += 3 * (completion + 16)  # the statements (at most one completion) re-sent, with numbering
    if ANSWER_RELEVANCE in judge.metrics:
        total_bytes += sum(map(_bytes, prompt_messages("ragas_questions", answer=answer, n=judge.questions)))
        calls += 1
    if CONTEXT_RELEVANCE in judge.metrics:
        total_bytes += sum(map(_bytes, prompt_messages("ragas_extract", question=question, context=context)))
        calls += 1
    per_call_overhead = 16  # chat-format tokens around the two messages
    return -(-total_bytes // 3) + calls * (completion + per_call_overhead)


class OnlineJudge(Exporter):
    """An exporter that judges scored interactions in the background (see the module docstring).

    Append it to the proxy's ExporterSet; `exporter` is that set (judgements are reported to all its members).
    """

    def __init__(
        self,
        judge: Judge,
        policy: JudgePolicy,
        exporter: Exporter | None = None,
        *,
        metrics: JudgePrometheusMetrics | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.judge = judge
        self.policy = policy
        self.exporter = exporter
        self.metrics = metrics
        self.max_tokens = max_tokens if max_tokens is not None else judge.client.endpoint.max_tokens
        self.tasks: set[asyncio.Task[None]] = set()
        self.skipped: Counter[str] = Counter()
        self.triggers: Counter[str] = Counter()
        self.judged = 0
        self.failed = 0
        self.usage_tokens = 0
        if metrics is not None:
            metrics.set_budget_remaining(self._remaining())

    def _remaining(self) -> float:
        remaining = self.policy.budget.remaining()
        return -1.0 if remaining == float("inf") else remaining

    def _skip(self, reason: str) -> None:
        self.skipped[reason] += 1
        if self.metrics is not None:
            self.metrics.record_skip(reason)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._skip("no_event_loop")
            return
        answer = interaction.answer or ""
        contexts = [d.text for d in interaction.documents]
        has_answer = bool(answer.strip())
        decision = self.policy.decide(
            assessment.verdict, has_answer, self.judge.calls_per_sample(),
            lambda: estimate_tokens(self.judge, interaction.question, contexts, answer, self.max_tokens),
        )
        if not decision.judge:
            self._skip(decision.reason)
            return
        self.triggers[decision.reason] += 1
        task = loop.create_task(self._run(interaction, contexts, decision), name="ragtap-judge")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, interaction: Interaction, contexts: list[str], decision: Decision) -> None:
        judgement: Judgement | None = None
        try:
            judgement = await self.judge.judge(interaction.question, contexts, interaction.answer)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # e.g. the embedder failed: count, never propagate
            self.failed += 1
            log.warning("online judge failed: %s", type(error).__name__)
        finally:
            actual = judgement.usage.total_tokens if judgement is not None else 0
            self.usage_tokens += actual
            self.policy.finished(decision, actual)
            if self.metrics is not None:
                self.metrics.set_budget_remaining(self._remaining())
        if judgement is None:
            return
        self.judged += 1
        interaction.judgement = judgement
        if self.metrics is not None:
            self.metrics.record_judgement(judgement, decision.reason)
        hook = getattr(self.exporter, "interaction_judged", None) if self.exporter is not None else None
        if hook is not None:
            try:
                hook(interaction, judgement)
            except Exception:
                log.exception("interaction_judged failed")

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait (bounded) for the judgements in flight."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)

    async def aclose(self, drain_timeout: float = 10.0) -> None:
        """Drain, cancel what is left, close the judge's HTTP client.  Call before `ExporterSet.shutdown()`."""
        await self.drain(drain_timeout)
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.judge.client.close()

    def shutdown(self) -> None:
        for task in list(self.tasks):
            task.cancel()


def build_online_judge(
    settings: JudgeSettings,
    embedder: Embedder | None,
    exporter: Exporter | None,
    *,
    upstream: str,
    registry: CollectorRegistry | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    environ: dict[str, str] | None = None,
    client: Any = None,
) -> OnlineJudge:
    """The online judge for the proxy: append the result to the ExporterSet and `await aclose()` at shutdown.

    `upstream` is the proxy's upstream base URL (the judge's default endpoint); `registry` the Prometheus
    registry for the `ragtap_judge_*` metrics (None: no metrics).
    """
    from ragtap.judge.client import JudgeClient

    judge_client = JudgeClient(settings.endpoint(upstream, environ), client=client)
    judge = Judge(judge_client, embedder, questions=settings.questions, metrics=settings.metrics)
    policy = JudgePolicy(
        sample_rate=settings.sample_rate,
        calls_per_second=settings.calls_per_second,
        burst_calls=max(settings.burst_calls, judge.calls_per_sample()),
        daily_token_budget=settings.daily_token_budget,
        max_in_flight=settings.max_in_flight,
        rng=rng if rng is not None else random.Random(settings.seed),
        clock=clock,
        monotonic=monotonic,
    )
    metrics = None
    if registry is not None:
        from ragtap.exporters.judge import JudgePrometheusMetrics

        metrics = JudgePrometheusMetrics(registry)
    return OnlineJudge(judge, policy, exporter, metrics=metrics)
