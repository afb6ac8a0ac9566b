"""`ragtap experiment wikieval`: the Ragas paper's Table 1 protocol on WikiEval, for ragtap's zero-call cosine
scores, the other zero-call signals explored for answer relevance, and (with `--judge-url`) the Ragas metrics.

Protocol (seed 000, section 5): each of the 50 rows pairs the human-preferred candidate with a worse one; a metric
agrees with the annotators on a row when it scores the preferred candidate higher.  The agreement is the fraction
of rows where it does; a tie (same score; or a null judge score on either side) counts as half a row.

- faithfulness: `answer` (written from the context) over `ungrounded_answer` (written without it), given the
  context `context_v1` (a Python-list literal of passages: parsed with `ast.literal_eval`, joined by blank lines);
- answer relevance: `answer` over `poor_answer` (ChatGPT asked to answer "in an incomplete manner").
- context relevance needs `context_v2` (the context padded with less relevant sentences), which the data set in
  ../shared/data does not keep, so it is not run.

Text clean-up (`normalise`): the `question` field starts with "Question: " and the grounded `answer` with
"Answer: " (only that candidate: a label leak for any signal that reads the text); poor answers end with a stray
"'" (from the CSV export).  All three are removed before scoring, except by the `qa_raw` signal, which is the
thesis's QA on the texts exactly as the file has them.

Usage::

    ragtap experiment wikieval [--data DIR|FILE] [--out DIR] [--limit N] [--judge-url URL --judge-model M]

`run_wikieval(args)` is the command; `add_wikieval_parser(subparsers)` registers it under `ragtap experiment`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragtap.evaluation.datasets import WIKIEVAL_TASKS, WikiEvalRow, load_wikieval
from ragtap.judge.settings import add_endpoint_arguments, with_arguments
from ragtap.scoring.refusal import DEFAULT_REFUSAL_DETECTOR
from ragtap.scoring.sentences import split_sentences
from ragtap.types import Assessment, Document, Interaction, Verdict

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder
    from ragtap.judge.ragas import Judge

TASKS = WIKIEVAL_TASKS

# Table 1 of the paper (WikiEval agreement with the annotators) and the LLM calls each method spends per row.
PAPER: dict[str, dict[str, float]] = {
    "faithfulness": {"Ragas": 0.95, "GPT Score": 0.72, "GPT Ranking": 0.54},
    "answer_relevance": {"Ragas": 0.78, "GPT Score": 0.52, "GPT Ranking": 0.40},
}
PAPER_CALLS: dict[str, dict[str, str]] = {
    "faithfulness": {"Ragas": "4 (2 per candidate)", "GPT Score": "2 (1 per candidate)", "GPT Ranking": "1"},
    "answer_relevance": {"Ragas": "2 (1 per candidate) + embeddings", "GPT Score": "2 (1 per candidate)", "GPT Ranking": "1"},
}


def default_data_dir() -> Path:
    return Path(os.environ.get("RAGTAP_DATA", "../shared/data"))


def data_file(data: str | Path | None) -> Path:
    path = Path(data) if data else default_data_dir()
    return path if path.suffix == ".jsonl" else path / "wikieval" / "wikieval.jsonl"


# ------------------------------------------------------------------------------------------------- data
# One loader for every experiment: ragtap.evaluation.datasets (WikiEvalRow, load_wikieval, wikieval_contexts).


# ------------------------------------------------------------------------------------- zero-call signals

_STOPWORDS = frozenset(
    "a an the of and or in on at to for by with from is are was were be been being what who whom when where which how "
    "why does do did its it this that these those as into about than then there their they he she his her has have had "
    "will would can could may might also not no".split()
)
_WORD = re.compile(r"[a-z0-9]+")
# Hedges that mark an answer (or part of it) as noncommittal, beyond ragtap's refusal detector (which catches
# "I do not have information about ...").
HEDGE = re.compile(
    r"\b(?:(?:has|have|had|is|are|was|were) not (?:been )?(?:provided|specified|mentioned|disclosed|announced|stated|"
    r"made public|released)|not (?:yet )?(?:known|clear|available)|(?:currently |still )?unknown|unclear|"
    r"no (?:specific |further )?information|cannot be determined|I don't know|I'm not sure)\b",
    re.IGNORECASE,
)


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def noncommittal(text: str) -> bool:
    """ragtap's refusal detector, or a hedge ("... has not been provided", "... is currently unknown")."""
    return DEFAULT_REFUSAL_DETECTOR.find(text) is not None or HEDGE.search(text) is not None


class Vectors:
    """Every text the signals need, embedded once (deduplicated) and looked up by text."""

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        unique = list(dict.fromkeys(texts))
        matrix = embedder.embed(unique) if unique else np.zeros((0, getattr(embedder, "dim", 1)), dtype=np.float32)
        self.rows = {text: matrix[i] for i, text in enumerate(unique)}

    def __call__(self, text: str) -> np.ndarray:
        return self.rows[text]

    def many(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.rows[t] for t in texts])


@functools.lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(split_sentences(text)) or (text.strip() or text,)


def sentences(text: str) -> list[str]:
    return list(_sentences(text))


@dataclass(frozen=True)
class Signal:
    name: str
    group: str  # "cosine" (ragtap's scores), "sentence", "lexical", "combined", "bias check"
    description: str
    fn: Callable[[Vectors, WikiEvalRow, str, str], float]  # (vectors, row, candidate, raw candidate) -> score


def _support_matrix(v: Vectors, row: WikiEvalRow, candidate: str) -> np.ndarray:
    """cos(answer sentence i, context sentence j)."""
    return v.many(sentences(candidate)) @ v.many(sentences(row.context)).T


def _support(v: Vectors, row: WikiEvalRow, c: str) -> float:
    return float(_support_matrix(v, row, c).max(axis=1).mean())


def _coverage(v: Vectors, row: WikiEvalRow, c: str) -> float:
    return float(_support_matrix(v, row, c).max(axis=0).mean())


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r <= 0 else 2 * p * r / (p + r)


def _qfocus(k: int) -> Callable[[Vectors, WikiEvalRow, str, str], float]:
    def fn(v: Vectors, row: WikiEvalRow, c: str, raw: str) -> float:
        context = v.many(sentences(row.context))
        top = np.argsort(-(context @ v(row.question)))[:k]
        return float((context[top] @ v.many(sentences(c)).T).max(axis=1).mean())

    return fn


def _lexical(row: WikiEvalRow, c: str) -> tuple[float, float]:
    answer, context = content_words(c), content_words(row.context)
    in_context, in_answer = set(context), set(answer)
    precision = sum(w in in_context for w in answer) / max(1, len(answer))
    recall = sum(w in in_answer for w in context) / max(1, len(context))
    return precision, recall


def _committal_first(score: Callable[[Vectors, WikiEvalRow, str, str], float]) -> Callable[[Vectors, WikiEvalRow, str, str], float]:
    """Rank every committal answer above every noncommittal one, then by `score` (no weight to tune)."""
    return lambda v, row, c, raw: (0.0 if noncommittal(c) else 10.0) + score(v, row, c, raw)


def _centroid(v: Vectors, row: WikiEvalRow, c: str, raw: str) -> float:
    centre = v(row.question) + v(row.context)
    return float(v(c) @ (centre / max(np.linalg.norm(centre), 1e-12)))


_SENTENCE_F1 = lambda v, row, c, raw: _f1(_support(v, row, c), _coverage(v, row, c))  # noqa: E731

SIGNALS: tuple[Signal, ...] = (
    Signal("qa_raw", "cosine", "QA: cos(question, answer), texts as in the file (\"Question: \"/\"Answer: \" kept)",
           lambda v, row, c, raw: float(v(str(row.raw["question"])) @ v(raw))),
    Signal("qa", "cosine", "QA: cos(question, answer), prefixes removed", lambda v, row, c, raw: float(v(row.question) @ v(c))),
    Signal("ard", "cosine", "ARD: cos(answer, context) (SDRD with the answer as its own support)",
           lambda v, row, c, raw: float(v(c) @ v(row.context))),
    Signal("sentence_support", "sentence", "mean over answer sentences of the best cosine to a context sentence",
           lambda v, row, c, raw: _support(v, row, c)),
    Signal("sentence_support_min", "sentence", "min over answer sentences of the best cosine to a context sentence",
           lambda v, row, c, raw: float(_support_matrix(v, row, c).max(axis=1).min())),
    Signal("context_coverage", "sentence", "mean over context sentences of the best cosine to an answer sentence",
           lambda v, row, c, raw: _coverage(v, row, c)),
    Signal("sentence_f1", "sentence", "harmonic mean of sentence_support (precision) and context_coverage (recall)", _SENTENCE_F1),
    *(Signal(f"qfocus_coverage_k{k}", "sentence", f"coverage of the {k} context sentences closest to the question", _qfocus(k))
      for k in (1, 2, 3, 5)),
    Signal("qa_sentence_max", "sentence", "max over answer sentences of cos(question, sentence)",
           lambda v, row, c, raw: float((v.many(sentences(c)) @ v(row.question)).max())),
    Signal("qa_sentence_mean", "sentence", "mean over answer sentences of cos(question, sentence)",
           lambda v, row, c, raw: float((v.many(sentences(c)) @ v(row.question)).mean())),
    Signal("centroid_qc", "cosine", "cos(answer, normalised mean of the question and context vectors)", _centroid),
    Signal("a_vs_q_plus_c", "cosine", "cos(answer, embedding of the question and context as one text)",
           lambda v, row, c, raw: float(v(c) @ v(f"{row.question}\n{row.context}"))),
    Signal("ard_minus_qa", "cosine", "ARD - QA (close to the documents rather than to the question's wording)",
           lambda v, row, c, raw: float(v(c) @ v(row.context) - v(c) @ v(row.question))),
    Signal("committal", "lexical", "1 unless the answer is noncommittal (refusal detector or hedge wording)",
           lambda v, row, c, raw: 0.0 if noncommittal(c) else 1.0),
    Signal("committal_then_ard", "combined", "committal answers first, then ARD", _committal_first(lambda v, row, c, raw: float(v(c) @ v(row.context)))),
    Signal("committal_then_qa", "combined", "committal answers first, then QA", _committal_first(lambda v, row, c, raw: float(v(row.question) @ v(c)))),
    Signal("committal_then_sentence_support", "combined", "committal answers first, then sentence_support",
           _committal_first(lambda v, row, c, raw: _support(v, row, c))),
    Signal("committal_then_sentence_f1", "combined", "committal answers first, then sentence_f1", _committal_first(_SENTENCE_F1)),
    Signal("lexical_precision", "lexical", "share of the answer's content words found in the context",
           lambda v, row, c, raw: _lexical(row, c)[0]),
    Signal("lexical_recall", "lexical", "share of the context's content words found in the answer",
           lambda v, row, c, raw: _lexical(row, c)[1]),
    Signal("lexical_f1", "lexical", "harmonic mean of lexical_precision and lexical_recall",
           lambda v, row, c, raw: _f1(*_lexical(row, c))),
    Signal("question_word_recall", "lexical", "share of the question's content words found in the answer",
           lambda v, row, c, raw: (lambda q: sum(w in set(content_words(c)) for w in q) / max(1, len(q)))(set(content_words(row.question)))),
    Signal("length", "bias check", "answer length in characters (not a quality signal: shows the data set's length bias)",
           lambda v, row, c, raw: float(len(c))),
)
RECOMMENDED = "sentence_support"  # see docs/judge.md, "The best zero-call signal for answer relevance"


def texts_to_embed(rows: Sequence[WikiEvalRow]) -> list[str]:
    texts: list[str] = []
    for row in rows:
        texts += [row.question, str(row.raw["question"]), row.context, f"{row.question}\n{row.context}", *sentences(row.context)]
        for task in TASKS:
            for preferred in (True, False):
                c = row.candidate(task, preferred)
                texts += [c, row.raw_candidate(task, preferred), *sentences(c)]
    return texts


# -------------------------------------------------------------------------------------------- agreement


def preference(good: float | None, bad: float | None) -> float:
    """1 when the preferred candidate scores higher, 0 when lower, 0.5 on a tie or when a score is missing."""
    if good is None or bad is None or good == bad:
        return 0.5
    return 1.0 if good > bad else 0.0


def bootstrap_ci(outcomes: Sequence[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    x = np.asarray(outcomes, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


@dataclass
class MetricOutcome:
    outcomes: list[float]
    description: str
    group: str
    calls_per_row: float = 0.0
    nulls: int = 0

    @property
    def agreement(self) -> float:
        return float(np.mean(self.outcomes)) if self.outcomes else float("nan")

    @property
    def ties(self) -> int:
        return sum(1 for o in self.outcomes if o == 0.5)

    def halves(self) -> tuple[float, float]:
        mid = len(self.outcomes) // 2
        first, second = self.outcomes[:mid], self.outcomes[mid:]
        return (float(np.mean(first)) if first else float("nan"), float(np.mean(second)) if second else float("nan"))


def verdict_pairs(rows: Sequence[WikiEvalRow]) -> list[Interaction]:
    """Each row as two interactions, (grounded answer, ungrounded answer), the context's passages as documents:
    what ragtap's proxy would score for an app that answered each way (no supporting content)."""
    items = []
    for row in rows:
        documents = tuple(Document(p) for p in row.contexts)
        items.extend(Interaction(question=row.question, documents=documents, answer=answer) for answer in (row.answer, row.ungrounded_answer))
    return items


def verdict_outcome(assessments: Sequence[Assessment]) -> MetricOutcome:
    """Faithfulness through the product's own verdict path: a row agrees when the grounded answer's verdict is
    `grounded` and the ungrounded answer's is not (both the same: a tie, half a row)."""
    grounded = [a.verdict is Verdict.GROUNDED for a in assessments]
    outcomes = [preference(float(good), float(bad)) for good, bad in zip(grounded[0::2], grounded[1::2])]
    return MetricOutcome(outcomes, "ragtap's verdict (grounded vs flagged), claim by claim, as the proxy scores an answer", "verdict")


def zero_call_outcomes(rows: Sequence[WikiEvalRow], embedder: Embedder) -> dict[str, dict[str, MetricOutcome]]:
    vectors = Vectors(embedder, texts_to_embed(rows))
    results: dict[str, dict[str, MetricOutcome]] = {task: {} for task in TASKS}
    for task in TASKS:
        for signal in SIGNALS:
            outcomes = []
            for row in rows:
                good = signal.fn(vectors, row, row.candidate(task, True), row.raw_candidate(task, True))
                bad = signal.fn(vectors, row, row.candidate(task, False), row.raw_candidate(task, False))
                outcomes.append(preference(good, bad))
            results[task][signal.name] = MetricOutcome(outcomes, signal.description, signal.group)
    return results


async def judge_outcomes(rows: Sequence[WikiEvalRow], faith_judge: Judge, relevance_judge: Judge,
                         cache: Any = None, progress: Any = None) -> tuple[dict[str, dict[str, MetricOutcome]], dict[str, Any]]:
    """The Ragas metrics on both candidates of every row (faithfulness: 2 calls per candidate; answer relevance:
    1 call per candidate plus embeddings).  A null score counts as a tie."""
    from ragtap.judge.cache import judge_key
    from ragtap.judge.ragas import Judgement

    async def one(judge: Judge, row: WikiEvalRow, candidate: str) -> Judgement:
        embedder_name = getattr(judge.embedder, "name", None) if judge.embedder is not None else None
        key = judge_key(row.question, [row.context], candidate, model=judge.model, prompt_versions=judge.prompt_versions,
                        questions=judge.questions, embedder=embedder_name)
        if cache is not None and (hit := cache.get(key)) is not None:
            return Judgement.from_dict(hit)
        judgement = await judge.judge(row.question, [row.context], candidate)
        if cache is not None and not judgement.transport_error:
            cache.put(key, judgement.as_dict())
        return judgement

    async def per_row(row: WikiEvalRow) -> dict[str, tuple[Judgement, Judgement]]:
        pairs = await asyncio.gather(
            one(faith_judge, row, row.answer), one(faith_judge, row, row.ungrounded_answer),
            one(relevance_judge, row, row.answer), one(relevance_judge, row, row.poor_answer),
        )
        if progress is not None:
            progress.update(1)
        return {"faithfulness": (pairs[0], pairs[1]), "answer_relevance": (pairs[2], pairs[3])}

    per = await asyncio.gather(*(per_row(row) for row in rows))
    results: dict[str, dict[str, MetricOutcome]] = {}
    failures: dict[str, int] = {}
    for task, metric in (("faithfulness", "faithfulness"), ("answer_relevance", "answer_relevance")):
        outcomes, calls, nulls = [], 0, 0
        for judged in per:
            good, bad = judged[task]
            g, b = good.score(metric), bad.score(metric)
            nulls += (g is None) + (b is None)
            calls += sum(r.calls for r in good.results.values()) + sum(r.calls for r in bad.results.values())
            outcomes.append(preference(g, b))
        name = f"ragas_{metric}"
        results[task] = {name: MetricOutcome(outcomes, f"Ragas {metric.replace('_', ' ')} by the judge ({faith_judge.model})",
                                             "ragas", calls / max(1, len(rows)), nulls)}
        failures[task] = nulls
    usage = faith_judge.client.usage.as_dict()
    return results, {"model": faith_judge.model, "usage": usage, "null_scores": failures}


# ------------------------------------------------------------------------------------------------ report


def build_report(rows: Sequence[WikiEvalRow], results: dict[str, dict[str, MetricOutcome]], *, data: Path, embedder: str,
                 judge: dict[str, Any] | None, seconds: float) -> dict[str, Any]:
    report: dict[str, Any] = {
        "experiment": "wikieval",
        "data": str(data),
        "rows": len(rows),
        "embedder": embedder,
        "ties": "a tie (equal scores, or a null judge score) counts as half a row",
        "agreement": {task: {name: round(m.agreement, 4) for name, m in metrics.items()} for task, metrics in results.items()},
        "ci95": {task: {name: [round(x, 3) for x in bootstrap_ci(m.outcomes)] for name, m in metrics.items()} for task, metrics in results.items()},
        "halves": {task: {name: [round(x, 3) for x in m.halves()] for name, m in metrics.items()} for task, metrics in results.items()},
        "ties_count": {task: {name: m.ties for name, m in metrics.items()} for task, metrics in results.items()},
        "llm_calls_per_row": {task: {name: round(m.calls_per_row, 2) for name, m in metrics.items()} for task, metrics in results.items()},
        "descriptions": {name: m.description for metrics in results.values() for name, m in metrics.items()},
        "groups": {name: m.group for metrics in results.values() for name, m in metrics.items()},
        "paper": PAPER,
        "paper_llm_calls_per_row": PAPER_CALLS,
        "recommended_zero_call_answer_relevance": RECOMMENDED,
        "seconds": round(seconds, 1),
    }
    if judge is not None:
        report["judge"] = judge
    return report


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# WikiEval agreement with the human annotators (Ragas paper, Table 1 protocol)",
        "",
        f"{report['rows']} rows from `{report['data']}`; embedder `{report['embedder']}`.  Agreement = share of rows where the "
        "metric scores the human-preferred candidate higher; ties count as half a row.  95% CI: bootstrap over rows "
        "(2,000 resamples); halves: rows of the first and second half, separately.",
        "",
    ]
    titles = {"faithfulness": "Faithfulness: `answer` over `ungrounded_answer`",
              "answer_relevance": "Answer relevance: `answer` over `poor_answer`"}
    for task, metrics in report["agreement"].items():
        lines += [f"## {titles.get(task, task)}", "", "| metric | agreement | 95% CI | halves | ties | LLM calls / row | what it is |",
                  "|---|---|---|---|---|---|---|"]
        for name, value in sorted(metrics.items(), key=lambda kv: -kv[1]):
            lo, hi = report["ci95"][task][name]
            h1, h2 = report["halves"][task][name]
            calls = report["llm_calls_per_row"][task][name]
            mark = " **(recommended)**" if task == "answer_relevance" and name == report["recommended_zero_call_answer_relevance"] else ""
            lines.append(f"| `{name}`{mark} | {value:.2f} | {lo:.2f}–{hi:.2f} | {h1:.2f} / {h2:.2f} | {report['ties_count'][task][name]} | "
                         f"{calls:g} | {report['descriptions'][name]} |")
        for method, value in report["paper"][task].items():
            lines.append(f"| paper: {method} | {value:.2f} | | | | {report['paper_llm_calls_per_row'][task][method]} | Es et al. 2023, Table 1 (gpt-3.5-turbo-16k) |")
        lines.append("")
    lines.append("ragtap's cosine scores: WikiEval has no supporting content, so with the answer as its own support SDRD is `ard`, "
                 "SDQ is `qa` and SDA is 1 for both candidates (always a tie); QRD does not depend on the answer (always a tie).")
    lines.append("")
    lines.append("Context relevance is not run: it needs `context_v2`, which ../shared/data does not keep (paper: Ragas 0.70).")
    if "judge" in report:
        usage = report["judge"]["usage"]
        lines += ["", f"Judge `{report['judge']['model']}`: {usage['calls']} calls ({usage['retries']} retried, {usage['failed']} failed), "
                  f"{usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion tokens; null scores {report['judge']['null_scores']}."]
    else:
        lines += ["", "No judge endpoint given (`--judge-url`): the Ragas metrics were not run."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- command


def add_wikieval_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "wikieval",
        help="Ragas Table 1 on WikiEval: agreement of ragtap's zero-call scores (and, with --judge-url, the Ragas metrics) with humans",
    )
    p.add_argument("--data", help="data directory holding wikieval/wikieval.jsonl, or the .jsonl itself (default: $RAGTAP_DATA or ../shared/data)")
    p.add_argument("--out", help="write DIR/report.md and DIR/report.json")
    p.add_argument("--limit", type=int, help="only the first N rows")
    p.add_argument("--config", help="config.toml ([scoring] embedder, [judge] endpoint)")
    add_endpoint_arguments(p)  # --judge-url given: the Ragas metrics run too
    p.add_argument("--cache", help="judge cache file (resumable; default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _embedder(config: Any) -> Embedder:
    from ragtap.wiring import build_embedder

    return build_embedder(config, all_cores=True)  # an experiment may use every core


def run_wikieval(args: argparse.Namespace) -> int:
    from ragtap.config import ConfigError, load_config

    try:
        config = load_config(getattr(args, "config", None))
    except ConfigError as error:
        print(f"ragtap: config error: {error}", file=sys.stderr)
        return 2
    path = data_file(args.data)
    if not path.is_file():
        print(f"ragtap: no WikiEval file at {path} (set --data or RAGTAP_DATA)", file=sys.stderr)
        return 2
    rows = load_wikieval(path, args.limit)
    started = time.perf_counter()
    embedder = _embedder(config)
    results = zero_call_outcomes(rows, embedder)
    from ragtap.pipeline.batch import assess_batch
    from ragtap.wiring import build_policy

    results["faithfulness"]["ragtap_verdict"] = verdict_outcome(assess_batch(verdict_pairs(rows), embedder, build_policy(config)))
    judge_info = None
    if args.judge_url:
        judge_results, judge_info = _run_judge(args, config, rows, embedder)
        for task, metrics in judge_results.items():
            results[task].update(metrics)
    report = build_report(rows, results, data=path, embedder=getattr(embedder, "name", type(embedder).__name__),
                          judge=judge_info, seconds=time.perf_counter() - started)
    markdown = render_markdown(report)
    print(markdown)
    if args.out:
        from ragtap.evaluation.report import save_report

        save_report(Path(args.out), markdown, report)
    return 0


def _run_judge(args: argparse.Namespace, config: Any, rows: Sequence[WikiEvalRow], embedder: Embedder) -> tuple[dict[str, dict[str, MetricOutcome]], dict[str, Any]]:

    from ragtap.judge.cache import JudgeCache
    from ragtap.judge.client import JudgeClient
    from ragtap.judge.ragas import Judge

    settings = with_arguments(config.judge, args)
    cache = JudgeCache(args.cache) if args.cache else None
    progress = None
    if not args.quiet:
        from tqdm import tqdm

        progress = tqdm(total=len(rows), unit="row", file=sys.stderr, desc="judge")

    async def main() -> tuple[dict[str, dict[str, MetricOutcome]], dict[str, Any]]:
        client = JudgeClient(settings.endpoint(config.server.upstream))
        try:
            faith = Judge(client, None, metrics=["faithfulness"])
            relevance = Judge(client, embedder, questions=max(1, settings.questions), metrics=["answer_relevance"])
            return await judge_outcomes(rows, faith, relevance, cache, progress)
        finally:
            await client.close()

    try:
        return asyncio.run(main())
    finally:
        if progress is not None:
            progress.close()
        if cache is not None:
            cache.close()
