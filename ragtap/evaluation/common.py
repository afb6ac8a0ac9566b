"""What the experiments share: run options, offline scoring with a progress bar, and the scored JSONL output."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtap.config import Config
from ragtap.evaluation.generate import GenerationRun, GenerationSettings
from ragtap.evaluation.jobs import DEFAULT_BATCH, assess_batches, batches_of
from ragtap.records import assessment_fields
from ragtap.types import Assessment, Document, Interaction
from ragtap.wiring import build_policy

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder


@dataclass(frozen=True, slots=True)
class RunOptions:
    data_dir: Path
    out_dir: Path
    config: Config
    limit: int | None = None
    seed: int = 0
    no_llm: bool = False
    generation: GenerationSettings | None = None  # required unless no_llm
    cache_path: Path | None = None  # generation cache; default out_dir / "generations.jsonl"
    index_cache_dir: Path | None = None  # faiss indexes; None = no cache
    top_k: int = 3
    quiet: bool = False
    plots: bool = True
    jobs: int = 1  # processes scoring in parallel (ragtap.evaluation.jobs); the CLI's default is one per core

    @property
    def generation_cache(self) -> Path:
        return self.cache_path or (self.out_dir / "generations.jsonl")


def score_offline(
    interactions: Sequence[Interaction], embedder: Embedder, config: Config, *, desc: str = "scoring", batch: int = DEFAULT_BATCH, quiet: bool = False,
    jobs: int = 1,
) -> list[Assessment]:
    """ragtap's scoring core over interactions that need no generation (an answer of None scores QRD only); with
    `jobs` > 1 the batches are spread over processes (same results, same order)."""
    from tqdm import tqdm

    out: list[Assessment] = []
    batches = batches_of(interactions, batch)
    scored = assess_batches(batches, build_policy(config), config, jobs=jobs, embedder=lambda: embedder)
    with tqdm(total=len(interactions), desc=desc, unit="interaction", file=sys.stderr, disable=quiet) as bar:
        for part, assessments in zip(batches, scored):
            out.extend(assessments)
            bar.update(len(part))
    return out


def interaction(question: str, documents: Sequence[str], answer: str | None = None, supporting: str | None = None) -> Interaction:
    return Interaction(question=question, documents=tuple(Document(d) for d in documents), answer=answer, supporting=supporting)


def offline_record(fields: dict[str, Any], item: Interaction, assessment: Assessment) -> dict[str, Any]:
    return {
        **fields,
        "question": item.question,
        "documents": [d.text for d in item.documents],
        "answer": item.answer,
        "supporting": item.supporting,
        **assessment_fields(assessment),
    }


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def scores_of(record: dict[str, Any]) -> dict[str, float | None]:
    scores = record.get("scores")
    return dict(scores) if isinstance(scores, dict) else {}


def header(title: str, lines: Sequence[str]) -> str:
    return "\n".join([f"# {title}", "", *lines, ""])


def generation_summary(run: GenerationRun, settings: GenerationSettings, cache: Path) -> tuple[dict[str, int], list[str]]:
    """The counts for report.json and the notes for report.md of one generation run (`generate()`'s result)."""
    counts = {"sent": run.sent, "cached": run.cached, "failed": len(run.failures)}
    notes = [
        f"generation: {run.sent} requests sent through ragtap to {settings.upstream} (model {settings.model}), "
        f"{run.cached} answered from the cache {cache}"
    ]
    if run.failures:
        notes.append(
            f"{len(run.failures)} requests failed after retries and are not in this report (rerun to retry them): "
            f"first error {run.failures[0][1]}"
        )
    return counts, notes
