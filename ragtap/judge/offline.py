"""Offline judging of an interaction file: the engine of `ragtap judge` (the CLI lives in ragtap/commands/judge.py).

Rows are judged by `workers` concurrent tasks (each row's metrics run concurrently too; the judge client caps the
calls in flight), written in input order as soon as a prefix of rows is done, and appended to the cache as they
finish.  The report's cost line counts this run's calls and tokens only: rows from the cache cost nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from ragtap.judge.cache import JudgeCache, judge_key
from ragtap.judge.client import Usage
from ragtap.judge.ragas import Judge, Judgement, MetricResult
from ragtap.records import base_record
from ragtap.types import Interaction


@dataclass
class OfflineReport:
    rows: int = 0
    from_cache: int = 0
    judged: int = 0
    transport_errors: int = 0  # rows with a failed call: written with null scores, not cached
    nulls: Counter[str] = field(default_factory=Counter)
    null_reasons: Counter[str] = field(default_factory=Counter)
    scores: dict[str, list[float]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0

    def add(self, judgement: Judgement) -> None:
        for name, result in judgement.results.items():
            if result.score is None:
                self.nulls[name] += 1
                self.null_reasons[f"{name}: {(result.reason or 'unknown').split(':')[0]}"] += 1
            else:
                self.scores.setdefault(name, []).append(result.score)

    def cost_line(self, price_prompt: float | None = None, price_completion: float | None = None) -> str:
        u = self.usage
        line = (
            f"cost: {u.calls} judge calls ({u.retries} retried, {u.failed} failed), "
            f"{u.prompt_tokens:,} prompt + {u.completion_tokens:,} completion tokens = {u.total_tokens:,} tokens"
        )
        if u.missing_usage:
            line += f" ({u.missing_usage} calls without usage)"
        if price_prompt is not None or price_completion is not None:
            dollars = (u.prompt_tokens * (price_prompt or 0.0) + u.completion_tokens * (price_completion or 0.0)) / 1e6
            line += f", ${dollars:.4f}"
        return line

    def summary(self, price_prompt: float | None = None, price_completion: float | None = None) -> str:
        lines = [
            f"judged {self.rows} rows in {self.seconds:.1f} s: {self.judged} by the judge, {self.from_cache} from the cache"
            + (f", {self.transport_errors} with failed calls (not cached: rerun to retry)" if self.transport_errors else "")
        ]
        for name, values in self.scores.items():
            lines.append(f"  {name:<18} mean {sum(values) / len(values):.3f}  (n={len(values)}, null {self.nulls.get(name, 0)})")
        for name in self.nulls:
            if name not in self.scores:
                lines.append(f"  {name:<18} all null (n=0, null {self.nulls[name]})")
        for reason, count in self.null_reasons.most_common(8):
            lines.append(f"  null: {reason} x{count}")
        lines.append(self.cost_line(price_prompt, price_completion))
        return "\n".join(lines)


async def _judge_one(item: Interaction, judge: Judge, cache: JudgeCache | None, embedder_name: str | None, report: OfflineReport) -> Judgement:
    """One row's judgement: from the cache when it was judged before with the same model, prompts and embedder;
    else from the judge (a failure becomes a judgement of nulls, never an exception)."""
    documents = [d.text for d in item.documents]
    key = judge_key(
        item.question, documents, item.answer, model=judge.model, prompt_versions=judge.prompt_versions,
        questions=judge.questions, embedder=embedder_name,
    )
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        report.from_cache += 1
        return Judgement.from_dict(cached)
    try:
        judgement = await judge.judge(item.question, documents, item.answer)
    except Exception as error:  # never lose the other rows to one row's failure
        failed = MetricResult(None, f"internal error ({type(error).__name__})", transport_error=True)
        judgement = Judgement({m: failed for m in judge.metrics}, judge.model, dict(judge.prompt_versions))
    report.judged += 1
    if judgement.transport_error:
        report.transport_errors += 1
    elif cache is not None:
        cache.put(key, judgement.as_dict())
    return judgement


def judged_record(interaction: Interaction, judgement: Judgement) -> dict[str, Any]:
    return {**base_record(interaction), "judge": judgement.as_dict()}


async def judge_interactions(
    interactions: Sequence[Interaction],
    judge: Judge,
    out: IO[bytes],
    *,
    cache: JudgeCache | None = None,
    workers: int = 8,
    on_row: Callable[[], None] | None = None,
) -> OfflineReport:
    """Judge every interaction, write `judged_record` lines to `out` in input order, and report."""
    started = time.perf_counter()
    report = OfflineReport(rows=len(interactions))
    usage_before = Usage()
    usage_before.add(judge.client.usage)
    embedder_name = getattr(judge.embedder, "name", None) if judge.embedder is not None else None
    done: dict[int, Judgement] = {}
    next_to_write = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(interactions)):
        queue.put_nowait(index)

    def flush() -> None:
        nonlocal next_to_write
        while next_to_write in done:
            judgement = done.pop(next_to_write)
            out.write(orjson.dumps(judged_record(interactions[next_to_write], judgement)) + b"\n")
            next_to_write += 1

    async def work() -> None:
        while True:
            try:
                index = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            judgement = await _judge_one(interactions[index], judge, cache, embedder_name, report)
            report.add(judgement)
            done[index] = judgement
            flush()
            if on_row is not None:
                on_row()

    await asyncio.gather(*(work() for _ in range(max(1, workers))))
    flush()
    report.usage = Usage.from_dict({k: v - getattr(usage_before, k) for k, v in judge.client.usage.as_dict().items()})
    report.seconds = time.perf_counter() - started
    return report
