"""The three metrics of the Ragas paper (Es et al., 2023; seed 000, section 3), computed with an LLM judge.

- faithfulness       F  = |V| / |S|: the judge splits the answer into statements S (call 1) and verifies each
                        against the context (call 2); V = the statements it supports.
- answer relevance   AR = (1/n) * sum_i cos(q, q_i): the judge writes n questions q_i from the answer (one call)
                        and ragtap's embedder compares them with the question q.  As in later Ragas versions the
                        judge also says whether the answer is noncommittal; a noncommittal answer scores 0.
- context relevance  CR = |S_ext| / |sentences of c(q)|: the judge extracts the sentences needed to answer q
                        (one call); "Insufficient Information" (or nothing extracted) scores 0.  Both counts come
                        from `ragtap.judge.sentences.split_sentences`.

A metric whose judge reply cannot be read (no JSON, wrong shape, verdict count not matching the statements, no
noncommittal flag, ...) has score `None` and a `reason`; a failed call (after retries) likewise, with
`transport_error` set so that the offline cache does not keep it.  No score is ever made up.

The formulas are pure functions (`faithfulness_score`, `answer_relevance_score`, `context_relevance_score`),
tested on hand-computed fixtures.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragtap.judge.client import JudgeCallError, JudgeClient
from ragtap.judgement import ANSWER_RELEVANCE, CONTEXT_RELEVANCE, FAITHFULNESS, METRIC_NAMES, Judgement, MetricResult, Usage
from ragtap.judge.parse import MalformedReply, as_flag, extract_json, extract_object, text_list
from ragtap.scoring.sentences import split_sentences
from ragtap.prompts import load_prompt

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder


# The prompt files (ragtap/prompts/<name>.toml) each metric uses, and its judge calls per sample.
METRIC_PROMPTS: dict[str, tuple[str, ...]] = {
    FAITHFULNESS: ("ragas_statements", "ragas_verify"),
    ANSWER_RELEVANCE: ("ragas_questions",),
    CONTEXT_RELEVANCE: ("ragas_extract",),
}
CALLS_PER_SAMPLE: dict[str, int] = {name: len(prompts) for name, prompts in METRIC_PROMPTS.items()}

INSUFFICIENT = "insufficient information"
_PLACEHOLDER = re.compile(r"\{(question|answer|context|statements|n)\}")


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill `{question}`, `{answer}`, `{context}`, `{statements}`, `{n}` in one pass (so a placeholder inside a
    filled-in value is left alone); every other brace, e.g. of a JSON example, is literal."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def prompt_messages(name: str, **values: Any) -> tuple[str, str]:
    """(system, user) texts of prompt `name` with the placeholders filled."""
    prompt = load_prompt(name)
    text_values = {k: str(v) for k, v in values.items()}
    return render(str(prompt["system"]).strip(), text_values), render(str(prompt["user"]).strip(), text_values)


def prompt_versions(metrics: Sequence[str] = METRIC_NAMES) -> dict[str, int]:
    return {name: int(load_prompt(name)["version"]) for metric in metrics for name in METRIC_PROMPTS[metric]}


# ------------------------------------------------------------------------------------------------- formulas


def faithfulness_score(verdicts: Sequence[int]) -> float | None:
    """|V| / |S| for per-statement verdicts (1 = supported); None without statements."""
    if not verdicts:
        return None
    return sum(1 for v in verdicts if v) / len(verdicts)


def answer_relevance_score(question: np.ndarray, generated: np.ndarray, noncommittal: bool) -> float | None:
    """Mean cosine of the question's unit vector with each generated question's (rows of `generated`), times
    (1 - noncommittal).  None when there is no generated question and the answer is committal."""
    if noncommittal:
        return 0.0
    if generated.shape[0] == 0:
        return None
    return float(np.mean(generated @ question))


def context_relevance_score(extracted: int, total: int) -> float | None:
    """|S_ext| / |S|, with |S_ext| capped at |S| (a judge cannot extract more than there is); None if |S| = 0."""
    if total <= 0:
        return None
    return min(max(extracted, 0), total) / total


# --------------------------------------------------------------------------------------------- judgements


def _failed(error: JudgeCallError, calls: int) -> MetricResult:
    return MetricResult(None, error.reason, calls, transport_error=True)


class Judge:
    """Runs the Ragas metrics for one sample at a time (the three metrics concurrently).

    `embedder` (ragtap's, unit-length rows) is needed by answer relevance only; it runs in a worker thread.
    `questions` is the paper's n.  `metrics` selects a subset of METRIC_NAMES.
    """

    def __init__(
        self,
        client: JudgeClient,
        embedder: Embedder | None = None,
        *,
        questions: int = 3,
        metrics: Sequence[str] = METRIC_NAMES,
    ) -> None:
        unknown = set(metrics) - set(METRIC_NAMES)
        if unknown:
            raise ValueError(f"unknown judge metric(s) {', '.join(sorted(unknown))}; expected {', '.join(METRIC_NAMES)}")
        if questions < 1:
            raise ValueError("questions must be >= 1")
        self.client = client
        self.embedder = embedder
        self.questions = questions
        self.metrics = tuple(m for m in METRIC_NAMES if m in metrics)
        self.prompt_versions = prompt_versions(self.metrics)

    @property
    def model(self) -> str:
        return self.client.model

    def calls_per_sample(self) -> int:
        return sum(CALLS_PER_SAMPLE[m] for m in self.metrics)

    async def judge(self, question: str, contexts: Sequence[str], answer: str | None) -> Judgement:
        started = time.perf_counter()
        usage = Usage()
        context = "\n\n".join(c for c in contexts if c and c.strip())
        runners = {
            FAITHFULNESS: lambda: self.faithfulness(question, context, answer, usage),
            ANSWER_RELEVANCE: lambda: self.answer_relevance(question, answer, usage),
            CONTEXT_RELEVANCE: lambda: self.context_relevance(question, context, usage),
        }
        values = await asyncio.gather(*(runners[m]() for m in self.metrics))
        return Judgement(dict(zip(self.metrics, values)), self.model, dict(self.prompt_versions), usage, time.perf_counter() - started)

    # ---------------------------------------------------------------------------------------- faithfulness
    async def faithfulness(self, question: str, context: str, answer: str | None, usage: Usage) -> MetricResult:
        if not answer or not answer.strip():
            return MetricResult(None, "empty answer")
        if not context:
            return MetricResult(None, "no context")
        calls = 0
        try:
            calls += 1
            reply = await self.client.complete(*prompt_messages("ragas_statements", question=question, answer=answer), usage)
            try:
                statements = text_list(_field(extract_json(reply), "statements"), "statements")
            except MalformedReply as error:
                return MetricResult(None, f"malformed statements reply: {error}", calls)
            if not statements:
                return MetricResult(None, "the judge found no statements in the answer", calls, {"statements": []})
            listing = "\n".join(f"statement {i}: {s}" for i, s in enumerate(statements, 1))
            calls += 1
            reply = await self.client.complete(*prompt_messages("ragas_verify", context=context, statements=listing), usage)
        except JudgeCallError as error:
            return _failed(error, calls)
        details: dict[str, Any] = {"statements": statements}
        try:
            verdicts = parse_verdicts(reply, len(statements))
        except MalformedReply as error:
            return MetricResult(None, f"malformed verification reply: {error}", calls, details)
        details["verdicts"] = verdicts
        return MetricResult(faithfulness_score(verdicts), None, calls, details)

    # ------------------------------------------------------------------------------------ answer relevance
    async def answer_relevance(self, question: str, answer: str | None, usage: Usage) -> MetricResult:
        if not answer or not answer.strip():
            return MetricResult(None, "empty answer")
        if self.embedder is None:
            return MetricResult(None, "no embedder for answer relevance")
        try:
            reply = await self.client.complete(*prompt_messages("ragas_questions", answer=answer, n=self.questions), usage)
        except JudgeCallError as error:
            return _failed(error, 1)
        try:
            obj = extract_object(reply)
            questions = text_list(obj.get("questions", obj.get("question", [])), "questions")[: self.questions]
            if "noncommittal" not in obj:
                raise MalformedReply("no 'noncommittal' flag")
            noncommittal = as_flag(obj["noncommittal"])
            if noncommittal is None:
                raise MalformedReply(f"'noncommittal' is {obj['noncommittal']!r}, not 0 or 1")
        except MalformedReply as error:
            return MetricResult(None, f"malformed question-generation reply: {error}", 1)
        details: dict[str, Any] = {"questions": questions, "noncommittal": noncommittal}
        if noncommittal:
            return MetricResult(0.0, "noncommittal answer", 1, details)
        if not questions:
            return MetricResult(None, "the judge generated no question", 1, details)
        embedder = self.embedder
        try:
            vectors = await asyncio.to_thread(embedder.embed, [question, *questions])
        except Exception as error:  # a remote embedder can fail like a judge call: not a verdict on the answer
            return MetricResult(None, f"embedding failed ({type(error).__name__})", 1, details, transport_error=True)
        similarities = vectors[1:] @ vectors[0]
        details["similarities"] = [round(float(s), 6) for s in similarities]
        return MetricResult(answer_relevance_score(vectors[0], vectors[1:], False), None, 1, details)

    # ----------------------------------------------------------------------------------- context relevance
    async def context_relevance(self, question: str, context: str, usage: Usage) -> MetricResult:
        if not context:
            return MetricResult(None, "no context")
        total = len(split_sentences(context))
        if total == 0:
            return MetricResult(None, "the context has no sentence")
        try:
            reply = await self.client.complete(*prompt_messages("ragas_extract", question=question, context=context), usage)
        except JudgeCallError as error:
            return _failed(error, 1)
        try:
            extracted = parse_extraction(reply)
        except MalformedReply as error:
            return MetricResult(None, f"malformed extraction reply: {error}", 1, {"context_sentences": total})
        if extracted is None:
            return MetricResult(0.0, "insufficient information", 1, {"extracted": 0, "context_sentences": total})
        sentences = list(dict.fromkeys(s for item in extracted for s in split_sentences(item)))
        known = {_norm(s) for s in split_sentences(context)}
        details = {
            "extracted": len(sentences),
            "context_sentences": total,
            "not_in_context": sum(1 for s in sentences if _norm(s) not in known and _norm(s) not in _norm(context)),
        }
        return MetricResult(context_relevance_score(len(sentences), total), None, 1, details)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _field(value: Any, name: str) -> Any:
    """`value[name]` of a JSON object, or the value itself when the judge sent a bare array."""
    if isinstance(value, dict):
        if name not in value:
            raise MalformedReply(f"no '{name}' field")
        return value[name]
    if isinstance(value, list):
        return value
    raise MalformedReply(f"expected a JSON object with '{name}'")


def parse_verdicts(reply: str, expected: int) -> list[int]:
    """Per-statement verdicts (1 = supported) from a verification reply; exactly `expected` of them."""
    items = _field(extract_json(reply), "verdicts")
    if not isinstance(items, list):
        raise MalformedReply("'verdicts' is not a list")
    verdicts = []
    for i, item in enumerate(items, 1):
        value = item.get("verdict") if isinstance(item, dict) else item
        flag = as_flag(value)
        if flag is None:
            raise MalformedReply(f"verdict {i} is {value!r}, not Yes/No")
        verdicts.append(flag)
    if len(verdicts) != expected:
        raise MalformedReply(f"{len(verdicts)} verdicts for {expected} statements")
    return verdicts


def parse_extraction(reply: str) -> list[str] | None:
    """The extracted sentences, or None for "Insufficient Information" (also accepted as the bare phrase, the
    paper's own convention, or as the only item of the list)."""
    try:
        value = extract_json(reply)
    except MalformedReply:
        if INSUFFICIENT in reply.lower():
            return None
        raise
    items = _field(value, "sentences")
    if isinstance(items, str) and INSUFFICIENT in items.lower():
        return None
    extracted = text_list(items, "sentences")
    if all(INSUFFICIENT in s.lower() and len(s) < 40 for s in extracted):
        return None  # [] or ["Insufficient Information"]
    return extracted
