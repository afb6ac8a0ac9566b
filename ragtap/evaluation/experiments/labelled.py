"""`ragtap experiment ragtruth FILE` / `ragtap experiment faithbench FILE`: the verdict against human span labels.

Both files hold real answers of several LLMs with the documents they were written from and human-marked
hallucination spans, one JSON object per line: `id`, `question`, `documents` ([{text}]), `answer`, a boolean label
(`hallucinated`, or another field named with `--label`), `spans` ([{start, end, label_type | labels}]) and
`meta.generator`.  RAGTruth's summarization answers (ParticleMedia/RAGTruth; spans typed Evident/Subtle Conflict
and Baseless Info) and FaithBench (vectara/FaithBench: summaries chosen because detectors disagreed; spans typed
Unwanted.Intrinsic / Extrinsic, Questionable, Benign) are in that format in ragtap's shared data.

The experiment runs ragtap's own scoring path (no supporting content: the answers were written without ragtap's
instruction) and counts an answer as flagged when its verdict is parametric, unsupported_answer or refusal.  It
reports **balanced accuracy** (the mean of the recall of hallucinated answers and of clean ones: unlike F1 it does
not depend on the share of hallucinated answers, which differs tenfold between generators), pooled and **per
generator** (within one generator the task is harder: long answers of weak models are both more often hallucinated
and easier to flag), the share of clean answers flagged (what a user of that model sees as false alarms), recall by
span type (contradictions vs added content), and claim by claim: how many hallucinated spans fall in a claim ragtap
rejects, and how many clean claims it rejects.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtap.evaluation.datasets import DatasetError, read_jsonl
from ragtap.evaluation.report import jsonl, save_report
from ragtap.evaluation.stats import confusion
from ragtap.types import Assessment, Document, Interaction, Verdict

FLAGGED = frozenset({Verdict.PARAMETRIC, Verdict.UNSUPPORTED_ANSWER, Verdict.REFUSAL})


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # "conflict" / "added" / "other"


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    interaction: Interaction
    hallucinated: bool
    generator: str
    spans: tuple[Span, ...]  # the hallucination spans (offsets into the answer)


def _kind(span: dict[str, Any]) -> str:
    """Conflict (the answer contradicts the source) or added (says what the source does not), from either format."""
    labels = " ".join([str(span.get("label_type", "")), *map(str, span.get("labels", []) or [])]).lower()
    if "conflict" in labels or "intrinsic" in labels:
        return "conflict"
    if "baseless" in labels or "extrinsic" in labels:
        return "added"
    return "other"


def load_labelled(path: str | Path, label: str = "hallucinated", drop_worst: Sequence[str] = ()) -> list[LabelledAnswer]:
    rows = []
    for number, (where, record) in enumerate(read_jsonl(Path(path)), 1):
        try:
            if record.get("worst_label") in drop_worst:
                continue
            documents = tuple(Document(d["text"] if isinstance(d, dict) else str(d)) for d in record["documents"])
            item = Interaction(question=str(record["question"]), documents=documents, answer=str(record["answer"]),
                               id=str(record.get("id", number)))
            spans = tuple(
                Span(int(s["start"]), int(s["end"]), _kind(s)) for s in record.get("spans", [])
                if s.get("hallucinated", True) and isinstance(s.get("start"), int) and isinstance(s.get("end"), int)
            )
            generator = str((record.get("meta") or {}).get("generator", "unknown"))
            rows.append(LabelledAnswer(item.id or str(number), item, bool(record[label]), generator, spans))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise DatasetError(f"{where}: not a labelled-answer line ({type(error).__name__}: {error})") from error
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


def balanced(y: Sequence[bool], flagged: Sequence[bool]) -> dict[str, float | int]:
    c = confusion(y, flagged)
    tpr, tnr = c.recall, 1.0 - c.fpr
    have_both = c.tp + c.fn > 0 and c.fp + c.tn > 0
    return {"n": c.n, "hallucinated": c.tp + c.fn, "balanced_accuracy": (tpr + tnr) / 2 if have_both else float("nan"),
            "recall": tpr, "clean_flagged": c.fpr, "precision": c.precision, "f1": c.f1}


def build_report(rows: Sequence[LabelledAnswer], assessments: Sequence[Assessment], *, file: str, label: str, seconds: float) -> dict[str, Any]:
    y = [r.hallucinated for r in rows]
    flagged = [a.verdict in FLAGGED for a in assessments]
    by_generator: dict[str, tuple[list[bool], list[bool]]] = defaultdict(lambda: ([], []))
    for row, f in zip(rows, flagged):
        by_generator[row.generator][0].append(row.hallucinated)
        by_generator[row.generator][1].append(f)
    generators = {g: balanced(a, b) for g, (a, b) in sorted(by_generator.items())}
    within = [g["balanced_accuracy"] for g in generators.values() if not math.isnan(g["balanced_accuracy"])]
    kinds = {}
    for kind in ("conflict", "added"):
        having = [f for row, f in zip(rows, flagged) if row.hallucinated and any(s.kind == kind for s in row.spans)]
        kinds[kind] = {"answers": len(having), "flagged": sum(having)}
    return {
        "file": file, "label": label, "rows": len(rows), "hallucinated": sum(y), "seconds": round(seconds, 1),
        "pooled": balanced(y, flagged),
        "mean_within_generator": sum(within) / len(within) if within else None,
        "generators": generators,
        "recall_by_span_kind": kinds,
        "claims": claim_level(rows, assessments),
        "verdicts": dict(Counter(a.verdict.value for a in assessments)),
    }


def claim_level(rows: Sequence[LabelledAnswer], assessments: Sequence[Assessment]) -> dict[str, Any]:
    """Hallucinated spans inside a claim ragtap rejects (by outcome), and clean judged claims it rejects."""
    spans_caught: Counter[str] = Counter()
    spans_total = 0
    clean = Counter()
    for row, a in zip(rows, assessments):
        claims = [c for c in a.claims if c.of == "answer"]
        for span in row.spans:
            spans_total += 1
            holding = [c for c in claims if c.start < span.end and span.start < c.end and c.supported is False]
            if holding:
                spans_caught["contradicted" if any(c.contradicted for c in holding) else "not_found"] += 1
        if not row.hallucinated:
            for c in claims:
                if c.supported is not None:
                    clean["judged"] += 1
                    clean[c.outcome.value] += 1
    return {
        "hallucinated_spans": spans_total,
        "spans_in_a_rejected_claim": sum(spans_caught.values()),
        "spans_in_a_contradicted_claim": spans_caught["contradicted"],
        "clean_answers_claims_judged": clean["judged"],
        "clean_answers_claims_not_found": clean["not_found"],
        "clean_answers_claims_contradicted": clean["contradicted"],
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def render_markdown(report: dict[str, Any], title: str) -> str:
    pooled, claims, kinds = report["pooled"], report["claims"], report["recall_by_span_kind"]
    lines = [
        f"# {title}: {report['file']} ({report['rows']} answers, {report['hallucinated']} hallucinated by `{report['label']}`)",
        "",
        "Flagged = verdict parametric, unsupported_answer or refusal.  Balanced accuracy = mean of the recall of "
        "hallucinated answers and of clean ones (independent of their shares).",
        "",
        "| generator | answers | hallucinated | balanced accuracy | recall | clean answers flagged | precision |",
        "|---|---|---|---|---|---|---|",
        *(f"| {g} | {v['n']} | {v['hallucinated']} | {_pct(v['balanced_accuracy'])} | {_pct(v['recall'])} | {_pct(v['clean_flagged'])} | "
          f"{_pct(v['precision'])} |" for g, v in report["generators"].items()),
        f"| **pooled** | {pooled['n']} | {pooled['hallucinated']} | **{_pct(pooled['balanced_accuracy'])}** | {_pct(pooled['recall'])} | "
        f"{_pct(pooled['clean_flagged'])} | {_pct(pooled['precision'])} |",
        f"| **mean within a generator** | | | **{_pct(report['mean_within_generator'])}** | | | |",
        "",
        f"Recall by span type: answers with a contradiction span {kinds['conflict']['flagged']}/{kinds['conflict']['answers']}; "
        f"with added content {kinds['added']['flagged']}/{kinds['added']['answers']}.",
        "",
        f"Claim by claim: {claims['spans_in_a_rejected_claim']} of {claims['hallucinated_spans']} hallucinated spans lie in a claim ragtap "
        f"rejects ({claims['spans_in_a_contradicted_claim']} in a contradicted one); in clean answers "
        f"{claims['clean_answers_claims_not_found']} + {claims['clean_answers_claims_contradicted']} (not found + contradicted) of "
        f"{claims['clean_answers_claims_judged']} judged claims are rejected.",
        "",
        f"Verdicts: {report['verdicts']}; {report['seconds']} s.",
    ]
    return "\n".join(lines)


def add_labelled_parsers(subparsers: argparse._SubParsersAction) -> None:
    for name, label, what in (
        ("ragtruth", "hallucinated", "RAGTruth (summaries of six LLMs, human spans typed Conflict / Baseless)"),
        ("faithbench", "hallucinated_unwanted_only", "FaithBench (hard summaries of ten LLMs; questionable cases dropped by default)"),
    ):
        p = subparsers.add_parser(name, help=f"{what}: balanced accuracy of the verdict, pooled and per generator")
        p.add_argument("file", help="labelled answers, one JSON object per line (e.g. ragtruth_summary/ragtruth_summary.jsonl)")
        p.add_argument("--label", default=label, help=f"the boolean field that marks a hallucinated answer (default {label})")
        p.add_argument("--drop-worst-label", action="append", default=["questionable"] if name == "faithbench" else [],
                       help="leave out rows whose worst_label is this (FaithBench: 'questionable' by default)")
        p.add_argument("--out", help="write DIR/report.md, DIR/report.json and DIR/rows.jsonl (verdict and claims per answer)")
        p.add_argument("--config", help="config.toml ([scoring] embedder, [thresholds], [claims])")
        p.add_argument("--quiet", action="store_true")


TITLES = {"ragtruth": "RAGTruth", "faithbench": "FaithBench"}


def run_labelled(args: argparse.Namespace) -> int:
    from ragtap.config import load_config
    from ragtap.evaluation.experiments.delucionqa import assess_all
    from ragtap.wiring import build_embedder, build_policy

    config = load_config(args.config)
    rows = load_labelled(args.file, args.label, tuple(args.drop_worst_label))
    started = time.perf_counter()
    embedder, policy = build_embedder(config, all_cores=True), build_policy(config)
    assessments = assess_all([r.interaction for r in rows], embedder, policy, args.quiet)
    report = build_report(rows, assessments, file=str(args.file), label=args.label, seconds=time.perf_counter() - started)
    markdown = render_markdown(report, TITLES[args.experiment])
    print(markdown)
    if args.out:
        save_report(Path(args.out), markdown, report, {"rows.jsonl": jsonl(map(row_dump, rows, assessments))})
    return 0


def row_dump(row: LabelledAnswer, a: Assessment) -> dict[str, Any]:
    return {
        "id": row.id, "generator": row.generator, "hallucinated": row.hallucinated, "verdict": a.verdict.value, "explanation": a.explanation,
        "spans": [[s.start, s.end, s.kind] for s in row.spans],
        "claims": [{"start": c.start, "end": c.end, "text": c.text, "outcome": c.outcome.value, "reason": c.reason, "conflicts": list(c.conflicts)}
                   for c in a.claims if c.of == "answer"],
    }
