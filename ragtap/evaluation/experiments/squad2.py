"""The thesis's SQuAD 2.0 experiment: the paragraph is the retrieved document (no retriever); unanswerable
questions (`is_impossible`) are the positive class, "poor generation".

Default sample: 1,485 questions, 493 unanswerable and 992 answerable (the thesis's numbers), seeded.
"""

from __future__ import annotations

import asyncio
import platform
from typing import TYPE_CHECKING, Any

from ragtap.evaluation import common
from ragtap.evaluation.datasets import SQUAD2, SquadQuestion, load_squad2, sample_two_classes
from ragtap.evaluation.generate import GenerationRequest, generate
from ragtap.evaluation.report import build_report, write_report

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

DEFAULT_N = 1485
POSITIVE_SHARE = 493 / 1485  # the thesis: 493 unanswerable of 1,485


def sample(questions: list[SquadQuestion], n: int, seed: int) -> list[SquadQuestion]:
    impossible = [i for i, q in enumerate(questions) if q.is_impossible]
    answerable = [i for i, q in enumerate(questions) if not q.is_impossible]
    pos, neg = sample_two_classes(impossible, answerable, n, POSITIVE_SHARE, seed)
    return [questions[i] for i in sorted(pos + neg)]


def _fields(q: SquadQuestion) -> dict[str, Any]:
    return {
        "id": q.id,
        "label": q.is_impossible,
        "is_impossible": q.is_impossible,
        "title": q.title,
        "gold_answers": sorted({a.text for a in q.answers}),
    }


def run(options: common.RunOptions, embedder: Embedder) -> dict[str, Any]:
    questions = load_squad2(options.data_dir)
    chosen = sample(questions, options.limit or DEFAULT_N, options.seed)
    records: list[dict[str, Any]]
    generation_notes: list[str] = []
    if options.no_llm:
        items = [common.interaction(q.question, [q.context]) for q in chosen]
        assessments = common.score_offline(items, embedder, options.config, desc="scoring QRD", quiet=options.quiet, jobs=options.jobs)
        records = [common.offline_record(_fields(q), item, a) for q, item, a in zip(chosen, items, assessments)]
    else:
        assert options.generation is not None
        requests = [GenerationRequest(f"squad2:{q.id}", q.question, (q.context,), _fields(q)) for q in chosen]
        run_ = asyncio.run(
            generate(requests, options.generation, options.config, embedder, options.generation_cache, desc="squad2 via ragtap", quiet=options.quiet)
        )
        records = run_.records
        generation_counts, generation_notes = common.generation_summary(run_, options.generation, options.generation_cache)
    common.write_jsonl(options.out_dir / "scored.jsonl", records)
    labels = [bool(r["label"]) for r in records]
    report = build_report(
        labels,
        [common.scores_of(r) for r in records],
        title="SQuAD 2.0: unanswerable = poor generation" + (" (no LLM: QRD only)" if options.no_llm else ""),
        positive_name="unanswerable",
        verdicts=None if options.no_llm else [r.get("verdict") for r in records],
        class_names=("unanswerable", "answerable"),
    )
    unscored = sum(1 for r in records if r.get("unscored_reason"))
    if unscored and not options.no_llm:
        report.notes.append(f"{unscored} replies could not be split into answer and supporting content (no SDQ/SDRD/SDA); they are excluded from the primary rules")
    report.notes += generation_notes
    data = report.as_dict()
    data["experiment"] = "squad2"
    data["no_llm"] = options.no_llm
    data["sample"] = {"requested": options.limit or DEFAULT_N, "seed": options.seed, "positive_share": POSITIVE_SHARE}
    data["embedder"] = embedder.name
    data["thresholds_configured"] = {m: options.config.thresholds.of(m) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")}
    if options.generation is not None and not options.no_llm:
        data["generation"] = {"upstream": options.generation.upstream, "model": options.generation.model, **generation_counts}
    plots = report.plot(options.out_dir) if options.plots else []
    head = common.header(
        "ragtap experiment squad2",
        [
            f"Data: `{options.data_dir / SQUAD2}`; each question's paragraph is its retrieved document (no retriever).",
            f"Sample: {len(records)} questions ({sum(labels)} unanswerable), seed {options.seed}. Embedder: {embedder.name}. Python {platform.python_version()}.",
            "Thesis (GPT-3.5-turbo, text-embedding-3, 1,485 questions): primary rule at 0.80: accuracy .7414, precision .6122, recall .6085, F1 .6104, F2 .6093; random labelling F1 .3994, F2 .4542.",
        ],
    )
    write_report(options.out_dir, head, [report.markdown(data)], data, plots)
    return data
