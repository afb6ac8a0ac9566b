"""The LLM judge's result for one sample: a shared record (layer 0), so that the exporters, the capture store and
the online judge's stage read it without importing the judge itself (`ragtap.judge` computes it).

`Judgement` holds one `MetricResult` per Ragas metric (`METRIC_NAMES`), the judge model and prompt versions, and
what judging cost (`Usage`).  `as_dict` / `from_dict` are the JSON form of the offline cache and output lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

FAITHFULNESS = "faithfulness"
ANSWER_RELEVANCE = "answer_relevance"
CONTEXT_RELEVANCE = "context_relevance"
METRIC_NAMES: tuple[str, ...] = (FAITHFULNESS, ANSWER_RELEVANCE, CONTEXT_RELEVANCE)


@dataclass
class Usage:
    """What judging cost: completed calls, attempts that were retried or gave up, and tokens from `usage`."""

    calls: int = 0  # completed chat completions (each has a usage record, when the server sends one)
    retries: int = 0  # attempts that failed and were retried
    failed: int = 0  # calls given up (after retries, or not retryable)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    missing_usage: int = 0  # completed calls whose response had no `usage`

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(**{f.name: int(data.get(f.name, 0) or 0) for f in fields(cls)})


@dataclass
class MetricResult:
    score: float | None
    reason: str | None = None  # why the score is None (or a note, e.g. "insufficient information")
    calls: int = 0  # judge calls this metric spent on the sample
    details: dict[str, Any] = field(default_factory=dict)
    transport_error: bool = False  # a call failed for good (retrying later may succeed)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"score": None if self.score is None else round(self.score, 6), "reason": self.reason, "calls": self.calls}
        if self.details:
            out["details"] = self.details
        if self.transport_error:
            out["transport_error"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricResult:
        return cls(data.get("score"), data.get("reason"), int(data.get("calls", 0)), dict(data.get("details") or {}), bool(data.get("transport_error", False)))


@dataclass
class Judgement:
    """The judge's three metrics for one sample, and what they cost."""

    results: dict[str, MetricResult]
    model: str
    prompt_versions: dict[str, int]
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0

    def score(self, metric: str) -> float | None:
        result = self.results.get(metric)
        return None if result is None else result.score

    @property
    def transport_error(self) -> bool:
        return any(r.transport_error for r in self.results.values())

    def as_dict(self) -> dict[str, Any]:
        """The `judge` object of an output line: scores flat, then reasons, details and cost."""
        out: dict[str, Any] = {name: (None if r.score is None else round(r.score, 6)) for name, r in self.results.items()}
        out["reasons"] = {name: r.reason for name, r in self.results.items() if r.reason}
        out["metrics"] = {name: r.as_dict() for name, r in self.results.items()}
        out["model"] = self.model
        out["prompts"] = self.prompt_versions
        out["usage"] = self.usage.as_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        results = {name: MetricResult.from_dict(value) for name, value in (data.get("metrics") or {}).items()}
        return cls(results, str(data.get("model", "")), dict(data.get("prompts") or {}), Usage.from_dict(data.get("usage") or {}))
