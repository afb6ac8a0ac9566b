"""`ragtap experiment delucionqa FILE`: ragtap's verdict against human labels of partial hallucinations.

DelucionQA (Sadat et al., EMNLP 2023 Findings; boschresearch/DelucionQA) holds real ChatGPT answers to
retrieval-augmented questions about a car owner's manual, each answer sentence labelled Supported, Conflicted or
Neither by crowd workers.  An answer is *hallucinated* when any sentence is not Supported.  The file format is
one JSON object per line: `id`, `question`, `documents` ([{id, text}] or strings), `answer`, `hallucinated`, and
optionally `answer_sentences` ([{sentence, label}]) for the per-claim dump.  Any split in that format works.

The experiment runs ragtap's own scoring path (no supporting content: the answers were generated without
ragtap's instruction), counts an answer as flagged when its verdict is parametric, unsupported_answer or refusal,
and reports macro-F1 (the paper's response-level measure), precision and recall of the flag, the AUROC of each
signal, and the answer-length baseline beside them so that a length artefact of the data shows.

`--fit TRAIN` derives the claim thresholds on another split first (grid search for the best macro-F1 on TRAIN;
with `--wikieval FILE`, only among thresholds that keep the WikiEval faithfulness agreement of the verdict at or
above `--wikieval-min`), then reports FILE with them: fit on train, report on dev.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragtap.evaluation.datasets import DatasetError, read_jsonl
from ragtap.evaluation.report import jsonl, save_report
from ragtap.evaluation.stats import auc, confusion
from ragtap.scoring.claims import ClaimThresholds, rejudge
from ragtap.scoring.verdict import assess
from ragtap.types import Assessment, Document, Interaction, Verdict

if TYPE_CHECKING:
    from ragtap.config import Config
    from ragtap.embedding.base import Embedder
    from ragtap.pipeline.batch import ScoringPolicy

FLAGGED = frozenset({Verdict.PARAMETRIC, Verdict.UNSUPPORTED_ANSWER, Verdict.REFUSAL})
BATCH = 64


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    interaction: Interaction
    hallucinated: bool
    sentence_labels: dict[str, str]  # answer sentence -> Supported | Conflicted | Neither


def load_split(path: str | Path) -> list[LabelledAnswer]:
    rows = []
    for number, (where, record) in enumerate(read_jsonl(Path(path)), 1):
        try:
            documents = tuple(Document(d["text"] if isinstance(d, dict) else str(d)) for d in record["documents"])
            item = Interaction(question=str(record["question"]), documents=documents, answer=str(record["answer"]), id=str(record.get("id", number)))
            labels = {s["sentence"]: s["label"] for s in record.get("answer_sentences", [])}
            rows.append(LabelledAnswer(item.id or str(number), item, bool(record["hallucinated"]), labels))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise DatasetError(f"{where}: not a DelucionQA line ({type(error).__name__}: {error})") from error
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


def assess_all(items: Sequence[Interaction], embedder: Embedder, policy: ScoringPolicy, quiet: bool = True, *, config: Config | None = None,
               jobs: int = 1) -> list[Assessment]:
    """Every item assessed in batches of BATCH; with `config` and `jobs` > 1 the batches go to that many processes
    (each builds the embedder `config` names: same results, same order)."""
    from ragtap.evaluation.jobs import assess_batches, batches_of

    out: list[Assessment] = []
    batches = batches_of(items, BATCH)
    for assessments in assess_batches(batches, policy, config, jobs=jobs, embedder=lambda: embedder):
        out.extend(assessments)
        if not quiet:
            print(f"\rscored {len(out)}/{len(items)}", end="", file=sys.stderr)
    if not quiet:
        print(file=sys.stderr)
    return out


def reassess(items: Sequence[Interaction], assessments: Sequence[Assessment], policy: ScoringPolicy, claims: ClaimThresholds) -> list[Assessment]:
    """The verdicts under other claim thresholds, from the claims already measured (no embedding)."""
    out = []
    for item, old in zip(items, assessments):
        rejudged = tuple(rejudge(c, claims) for c in old.claims)
        out.append(
            assess(old.scores, policy.thresholds, item.answer, refusal=policy.refusal, supporting=item.supporting,
                   documents=tuple(d.text for d in item.documents), claims=rejudged, claim_thresholds=claims)
        )
    return out


# ------------------------------------------------------------------------------------------------ signals


def _answer_claims(a: Assessment) -> list[Any]:
    return [c for c in a.claims if c.of == "answer" and c.supported is not None]


def signals(items: Sequence[Interaction], assessments: Sequence[Assessment]) -> dict[str, list[float]]:
    """Risk scores (higher = more likely hallucinated) for the AUROC table."""
    out: dict[str, list[float]] = {k: [] for k in ("unsupported_claim_share", "min_claim_lexical", "min_claim_similarity", "ard", "qa", "answer_length")}
    for item, a in zip(items, assessments):
        claims = _answer_claims(a)
        out["unsupported_claim_share"].append(sum(c.supported is False for c in claims) / len(claims) if claims else 0.0)
        out["min_claim_lexical"].append(1.0 - min((c.lexical_precision for c in claims), default=1.0))
        out["min_claim_similarity"].append(1.0 - min((c.similarity or 0.0 for c in claims), default=1.0))
        out["ard"].append(1.0 - (a.scores.ard or 0.0))
        out["qa"].append(1.0 - (a.scores.qa or 0.0))
        out["answer_length"].append(float(len(item.answer or "")))
    return out


def macro_f1(y: Sequence[bool], flagged: Sequence[bool]) -> float:
    pos = confusion(y, flagged)
    neg = confusion([not v for v in y], [not f for f in flagged])
    return (pos.f1 + neg.f1) / 2


def best_length_cut(y: Sequence[bool], lengths: Sequence[float]) -> float:
    """The answer-length threshold (flag answers at least this long) with the best macro-F1: the baseline."""
    return max(sorted(set(lengths)), key=lambda t: macro_f1(y, [v >= t for v in lengths]))


# ------------------------------------------------------------------------------------------------ fitting


@dataclass(frozen=True)
class _ClaimTable:
    """Every judged answer claim of a split as arrays, for a vectorised grid search."""

    lexical: np.ndarray
    similarity: np.ndarray
    aligned: np.ndarray  # the aligned window's share of the claim's words
    fixed_unsupported: np.ndarray  # unsupported whatever the thresholds (a missing number or name, a contradiction)
    row_of_claim: np.ndarray
    flagged_anyway: np.ndarray  # per row: flagged by a rule the claim thresholds do not touch (refusal wording...)
    rows: int

    @classmethod
    def of(cls, assessments: Sequence[Assessment]) -> _ClaimTable:
        lexical, similarity, aligned, fixed, owner, anyway = [], [], [], [], [], []
        for i, a in enumerate(assessments):
            claims = _answer_claims(a)
            anyway.append(a.verdict is Verdict.REFUSAL or (not claims and a.verdict in FLAGGED))
            for c in claims:
                lexical.append(c.lexical_precision)
                similarity.append(-1.0 if c.similarity is None else c.similarity)
                aligned.append(1.0 if c.evidence_share is None else c.evidence_share)
                fixed.append(c.reason in ("number_missing", "name_missing", "contradicted"))
                owner.append(i)
        return cls(np.array(lexical), np.array(similarity), np.array(aligned), np.array(fixed, dtype=bool), np.array(owner, dtype=int),
                   np.array(anyway, dtype=bool), len(assessments))

    def flagged(self, t: ClaimThresholds) -> np.ndarray:
        supported = ((self.lexical >= t.lexical_alone) & (self.aligned >= t.aligned)) | (self.similarity >= t.similarity) | (
            (self.lexical >= t.lexical) & (self.similarity >= t.similarity_with_lexical))
        bad = self.fixed_unsupported | ~supported
        rows = np.zeros(self.rows, dtype=bool)
        np.logical_or.at(rows, self.row_of_claim[bad], True)
        return rows | self.flagged_anyway


def _agreement(table: _ClaimTable, t: ClaimThresholds) -> float:
    """WikiEval faithfulness: rows alternate (grounded answer, ungrounded answer); the verdict agrees when it
    passes the first and flags the second; a tie counts half."""
    flagged = table.flagged(t)
    good, bad = flagged[0::2], flagged[1::2]
    return float(np.mean(np.where(~good & bad, 1.0, np.where(good & ~bad, 0.0, 0.5))))


GRID = {
    "lexical_alone": np.round(np.arange(0.30, 0.92, 0.04), 2),
    "aligned": np.round(np.arange(0.0, 0.55, 0.05), 2),
    "similarity": (0.70, 0.75, 0.80, 0.85),
    "lexical": np.round(np.arange(0.26, 0.52, 0.04), 2),
    "similarity_with_lexical": (0.3, 0.4, 0.5, 0.6),
}


def fit_claim_thresholds(y: Sequence[bool], fit: Sequence[Assessment], base: ClaimThresholds,
                         wikieval: Sequence[Assessment] | None = None, wikieval_min: float = 0.90) -> tuple[ClaimThresholds, dict[str, float]]:
    table, labels = _ClaimTable.of(fit), np.array(y, dtype=bool)
    wiki = _ClaimTable.of(wikieval) if wikieval else None
    best: tuple[float, ClaimThresholds, float | None] | None = None
    for values in itertools.product(*GRID.values()):
        t = dataclasses.replace(base, **{k: float(v) for k, v in zip(GRID, values)})
        if t.lexical > t.lexical_alone or t.similarity_with_lexical > t.similarity:
            continue
        agreement = _agreement(wiki, t) if wiki is not None else None
        if agreement is not None and agreement < wikieval_min:
            continue
        score = macro_f1(labels, table.flagged(t))
        if best is None or score > best[0] + 1e-12:
            best = (score, t, agreement)
    if best is None:
        raise DatasetError(f"no thresholds on the grid keep the WikiEval agreement at {wikieval_min}")
    return best[1], {"fit_macro_f1": best[0], **({"wikieval_agreement": best[2]} if best[2] is not None else {})}


# ------------------------------------------------------------------------------------------------ the command


def add_delucionqa_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("delucionqa", help="DelucionQA: the verdict against human labels of partial hallucinations")
    p.add_argument("file", help="a split in DelucionQA format (e.g. delucionqa/dev.jsonl; source: boschresearch/DelucionQA)")
    p.add_argument("--fit", help="derive the claim thresholds on this split first (e.g. delucionqa/train.jsonl)")
    p.add_argument("--wikieval", help="with --fit: WikiEval file whose faithfulness agreement must stay >= --wikieval-min")
    p.add_argument("--wikieval-min", type=float, default=0.90)
    p.add_argument("--out", help="write DIR/report.md, DIR/report.json and DIR/rows.jsonl (per-row dump)")
    p.add_argument("--config", help="config.toml ([scoring] embedder, [thresholds], [claims])")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--jobs", type=int, help="processes scoring in parallel (default: one per core; same results)")


def run_delucionqa(args: argparse.Namespace) -> int:
    from ragtap.config import load_config
    from ragtap.evaluation.jobs import default_jobs, threads_per_job
    from ragtap.wiring import build_embedder, build_policy

    config = load_config(args.config)
    rows = load_split(args.file)
    fit_rows = load_split(args.fit) if args.fit else None
    started = time.perf_counter()
    jobs = args.jobs or default_jobs()
    # With several jobs the processes build their own embedders: this one then needs a single thread.
    embedder, policy = build_embedder(config, threads=threads_per_job(jobs)), build_policy(config)
    items = [r.interaction for r in rows]
    assessments = assess_all(items, embedder, policy, args.quiet, config=config, jobs=jobs)
    claims, fit_info = policy.claims, {}
    if fit_rows is not None:
        fit_items = [r.interaction for r in fit_rows]
        fit_assessments = assess_all(fit_items, embedder, policy, args.quiet, config=config, jobs=jobs)
        wiki = None
        if args.wikieval:
            from ragtap.evaluation.experiments.wikieval import load_wikieval, verdict_pairs

            wiki = assess_all(verdict_pairs(load_wikieval(args.wikieval)), embedder, policy, args.quiet, config=config, jobs=jobs)
        claims, fit_info = fit_claim_thresholds([r.hallucinated for r in fit_rows], fit_assessments, policy.claims, wiki, args.wikieval_min)
        assessments = reassess(items, assessments, policy, claims)
        length_cut = best_length_cut([r.hallucinated for r in fit_rows], [float(len(i.answer or "")) for i in fit_items])
    else:
        length_cut = best_length_cut([r.hallucinated for r in rows], [float(len(i.answer or "")) for i in items])
    report = build_report(rows, assessments, claims, fit_info, length_cut, in_sample=fit_rows is None,
                          file=str(args.file), fit=args.fit, seconds=time.perf_counter() - started)
    markdown = render_markdown(report)
    print(markdown)
    if args.out:
        save_report(Path(args.out), markdown, report, {"rows.jsonl": jsonl(map(row_dump, rows, assessments))})
    return 0


def row_dump(row: LabelledAnswer, a: Assessment) -> dict[str, Any]:
    """One line of the error-analysis dump: the gold label beside ragtap's verdict, claim by claim."""
    return {
        "id": row.id, "hallucinated": row.hallucinated, "verdict": a.verdict.value, "explanation": a.explanation,
        "question": row.interaction.question, "answer": row.interaction.answer,
        "claims": [{"text": c.text, "supported": c.supported, "reason": c.reason, "lexical": round(c.lexical_precision, 3),
                    "similarity": None if c.similarity is None else round(c.similarity, 3), "gold": row.sentence_labels.get(c.text)}
                   for c in a.claims if c.of == "answer"],
    }


def build_report(rows: Sequence[LabelledAnswer], assessments: Sequence[Assessment], claims: ClaimThresholds, fit_info: dict[str, float],
                 length_cut: float, *, in_sample: bool, file: str, fit: str | None, seconds: float) -> dict[str, Any]:
    y = [r.hallucinated for r in rows]
    flagged = [a.verdict in FLAGGED for a in assessments]
    verdict = confusion(y, flagged)
    lengths = [float(len(r.interaction.answer or "")) for r in rows]
    length = confusion(y, [v >= length_cut for v in lengths])
    risks = signals([r.interaction for r in rows], assessments)
    return {
        "file": file, "fit": fit, "rows": len(rows), "hallucinated": sum(y), "seconds": round(seconds, 1),
        "claim_thresholds": {k: v for k, v in dataclasses.asdict(claims).items() if k != "verifier"}, **fit_info,
        "verdict": {"macro_f1": macro_f1(y, flagged), "precision": verdict.precision, "recall": verdict.recall, "accuracy": verdict.accuracy},
        "length_baseline": {"flag_if_chars_at_least": length_cut, "fitted_on": "the same file (in-sample)" if in_sample else fit,
                            "macro_f1": macro_f1(y, [v >= length_cut for v in lengths]), "precision": length.precision, "recall": length.recall},
        "auroc": {name: auc(y, values) for name, values in risks.items()},
        "verdicts": dict(Counter(a.verdict.value for a in assessments)),
    }


def render_markdown(report: dict[str, Any]) -> str:
    v, b = report["verdict"], report["length_baseline"]
    lines = [
        f"# DelucionQA: {report['file']} ({report['rows']} answers, {report['hallucinated']} hallucinated)",
        "",
        f"Claim thresholds: {report['claim_thresholds']}" + (f" (fitted on {report['fit']}: macro-F1 {report['fit_macro_f1']:.3f}"
                                                             + (f", WikiEval agreement {report['wikieval_agreement']:.2f}" if "wikieval_agreement" in report else "") + ")"
                                                             if report.get("fit") else ""),
        "",
        "| flag | macro-F1 | precision | recall |",
        "|---|---|---|---|",
        f"| ragtap verdict (parametric, unsupported_answer or refusal) | {v['macro_f1']:.3f} | {v['precision']:.3f} | {v['recall']:.3f} |",
        f"| answer length >= {b['flag_if_chars_at_least']:.0f} chars (baseline, cut fitted on {b['fitted_on']}) | {b['macro_f1']:.3f} | {b['precision']:.3f} | {b['recall']:.3f} |",
        "",
        "| signal (risk) | AUROC |",
        "|---|---|",
        *(f"| {name} | {'n/a' if value is None else f'{value:.3f}'} |" for name, value in report["auroc"].items()),
        "",
        f"Verdicts: {report['verdicts']}; {report['seconds']} s.",
    ]
    return "\n".join(lines)
