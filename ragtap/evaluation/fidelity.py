"""Does a faster embedder give the same verdicts?  Compares a candidate embedder with a reference (the fp32
MiniLM) on real interactions from the shared data: the cosine between their vectors of every text the scoring
pipeline embeds, and the verdicts the pipeline reaches with each.

The interactions: DelucionQA dev answers (each with and without a supporting content made of its first two
sentences), WikiEval's three candidates per question (grounded, ungrounded, poor) on the page intro, SQuAD 2.0
dev questions on their paragraph (answerable ones with their gold answer, unanswerable ones with the gold
answer of another question on the same paragraph: a fluent but wrong answer), and the five thesis examples.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragtap.demo.cases import thesis_cases
from ragtap.embedding.base import Embedder
from ragtap.evaluation.datasets import dataset_file, load_squad2, load_wikieval, read_jsonl
from ragtap.pipeline.batch import ScoringPolicy, assess_batch, texts_to_embed
from ragtap.scoring.sentences import split_sentences
from ragtap.types import Document, Interaction

BATCH = 16  # the proxy's micro-batch: claims and passages are embedded per micro-batch, as online

@dataclass(frozen=True, slots=True)
class Disagreement:
    source: str
    question: str
    reference: str
    candidate: str

@dataclass(frozen=True, slots=True)
class FidelityReport:
    interactions: int
    texts: int  # distinct texts the pipeline embedded for them
    mean_cosine: float
    min_cosine: float
    p1_cosine: float  # 1st percentile
    verdict_agreement: float  # share of interactions with the same verdict
    disagreements: tuple[Disagreement, ...]
    by_source: dict[str, tuple[int, int]]  # source -> (agreeing, total)

def thesis_interactions() -> list[tuple[str, Interaction]]:
    return [
        ("thesis", Interaction(question=c.question, documents=tuple(Document(t) for t in c.retrieved), answer=c.answer, supporting=c.supporting))
        for c in thesis_cases()
    ]

def delucionqa_interactions(data_dir: Path, limit: int | None = None) -> list[tuple[str, Interaction]]:
    out: list[tuple[str, Interaction]] = []
    for _, row in list(read_jsonl(dataset_file(data_dir, "delucionqa/dev.jsonl")))[:limit]:
        docs = tuple(Document(d["text"]) for d in row["documents"])
        support = " ".join(split_sentences(row["answer"])[:2])
        out.append(("delucionqa", Interaction(question=row["question"], documents=docs, answer=row["answer"])))
        out.append(("delucionqa", Interaction(question=row["question"], documents=docs, answer=row["answer"], supporting=support)))
    return out

def wikieval_interactions(data_dir: Path, limit: int | None = None) -> list[tuple[str, Interaction]]:
    out: list[tuple[str, Interaction]] = []
    for row in load_wikieval(dataset_file(data_dir, "wikieval/wikieval.jsonl"), limit):
        docs = tuple(Document(t) for t in row.contexts)
        for answer in (row.answer, row.ungrounded_answer, row.poor_answer):
            out.append(("wikieval", Interaction(question=row.question, documents=docs, answer=answer)))
    return out

def squad_interactions(data_dir: Path, limit: int) -> list[tuple[str, Interaction]]:
    """The first `limit` questions (file order) whose paragraph has at least one answerable question."""
    questions = load_squad2(data_dir)
    gold_by_paragraph: dict[int, str] = {}
    for q in questions:
        if q.answers and q.paragraph not in gold_by_paragraph:
            gold_by_paragraph[q.paragraph] = q.answers[0].text
    out: list[tuple[str, Interaction]] = []
    for q in questions:
        if len(out) >= limit:
            break
        answer = q.answers[0].text if q.answers else gold_by_paragraph.get(q.paragraph)
        if answer:
            out.append(("squad2", Interaction(question=q.question, documents=(Document(q.context),), answer=answer)))
    return out

def shared_interactions(data_dir: Path, *, delucionqa: int | None = None, wikieval: int | None = None, squad: int = 150) -> list[tuple[str, Interaction]]:
    """(source, interaction) pairs; `None` limits mean the whole split."""
    return thesis_interactions() + delucionqa_interactions(data_dir, delucionqa) + wikieval_interactions(data_dir, wikieval) + squad_interactions(data_dir, squad)

def compare(reference: Embedder, candidate: Embedder, labelled: Sequence[tuple[str, Interaction]], policy: ScoringPolicy) -> FidelityReport:
    items = [item for _, item in labelled]
    texts = texts_to_embed(items, policy)
    cosines = np.sum(reference.embed(texts) * candidate.embed(texts), axis=1)
    verdicts: dict[str, list[str]] = {}
    for name, embedder in (("reference", reference), ("candidate", candidate)):
        got: list[str] = []
        for start in range(0, len(items), BATCH):
            got += [a.verdict.value for a in assess_batch(items[start : start + BATCH], embedder, policy)]
        verdicts[name] = got
    by_source: dict[str, tuple[int, int]] = {}
    disagreements = []
    for (source, item), ref, cand in zip(labelled, verdicts["reference"], verdicts["candidate"]):
        agree, total = by_source.get(source, (0, 0))
        by_source[source] = (agree + (ref == cand), total + 1)
        if ref != cand:
            disagreements.append(Disagreement(source, item.question, ref, cand))
    agreeing = sum(a for a, _ in by_source.values())
    return FidelityReport(
        interactions=len(items),
        texts=len(texts),
        mean_cosine=float(cosines.mean()),
        min_cosine=float(cosines.min()),
        p1_cosine=float(np.percentile(cosines, 1)),
        verdict_agreement=agreeing / len(items),
        disagreements=tuple(disagreements),
        by_source=by_source,
    )

def report_json(report: FidelityReport) -> str:
    data = {k: getattr(report, k) for k in ("interactions", "texts", "mean_cosine", "min_cosine", "p1_cosine", "verdict_agreement")}
    data["by_source"] = {k: {"agree": a, "total": t} for k, (a, t) in report.by_source.items()}
    data["disagreements"] = [{f: getattr(d, f) for f in ("source", "question", "reference", "candidate")} for d in report.disagreements]
    return json.dumps(data, indent=2)

