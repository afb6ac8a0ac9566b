"""The MIRAGE protocol (BRIEF §3) over a user-supplied document pool.

Each question is answered three times through ragtap and the upstream: **base** (no context), **oracle**
(only the gold chunks: the pool chunks whose doc_name is the question's), **mixed** (the top-k chunks that
ragtap's embedder retrieves from the whole pool).  An answer is correct when any gold alias, lower-cased, is a
substring of the lower-cased answer (MIRAGE's loose exact match).  With G(b, o, m) the groups of questions by
the three outcomes:

    noise vulnerability       (|G(0,1,0)| + |G(1,1,0)|) / |D|   right with the oracle, wrong with noise
    context acceptability     (|G(0,1,1)| + |G(1,1,1)|) / |D|   right with the oracle and with noise
    context insensitivity     (|G(0,0,0)| + |G(0,0,1)|) / |D|   wrong without and with the oracle
    context misinterpretation (|G(1,0,0)| + |G(1,0,1)|) / |D|   right without context, wrong with the oracle

They partition the eight groups, so they sum to 1.  The retriever is scored over the pool at top-1/3/5
(relevant = same doc_name): precision, recall, F1, NDCG and hit rate.  Only questions with at least one gold
chunk in the pool are used (an oracle needs one).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragtap.evaluation import common
from ragtap.evaluation.datasets import MIRAGE, DatasetError, MirageQuestion, load_mirage, load_pool
from ragtap.evaluation.generate import GenerationRequest, generate
from ragtap.evaluation.report import build_report, write_report
from ragtap.evaluation.retrieval import build_index, embed_with_progress, mean_ranking_scores, ranking_scores

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

RETRIEVAL_KS = (1, 3, 5)
VARIANTS = ("base", "oracle", "mixed")
ADAPTABILITY = {
    "noise_vulnerability": ((0, 1, 0), (1, 1, 0)),
    "context_acceptability": ((0, 1, 1), (1, 1, 1)),
    "context_insensitivity": ((0, 0, 0), (0, 0, 1)),
    "context_misinterpretation": ((1, 0, 0), (1, 0, 1)),
}


def loose_match(answer: str | None, aliases: Sequence[str]) -> bool:
    if not answer:
        return False
    text = answer.lower()
    return any(alias.lower().strip() and alias.lower().strip() in text for alias in aliases)


def adaptability(outcomes: Sequence[tuple[bool, bool, bool]]) -> dict[str, Any]:
    """The four MIRAGE metrics and the eight group counts from (base, oracle, mixed) correctness triples."""
    groups: Counter[tuple[int, int, int]] = Counter((int(b), int(o), int(m)) for b, o, m in outcomes)
    n = len(outcomes)
    metrics = {name: (sum(groups[g] for g in members) / n if n else 0.0) for name, members in ADAPTABILITY.items()}
    total = sum(metrics.values())
    if n and abs(total - 1.0) > 1e-9:  # the four groups must partition the data
        raise AssertionError(f"MIRAGE metrics sum to {total}, not 1")
    return {
        **metrics,
        "sum": total,
        "groups": {f"G{b}{o}{m}": groups[(b, o, m)] for b in (0, 1) for o in (0, 1) for m in (0, 1)},
        "accuracy": {v: (sum(t[i] for t in outcomes) / n if n else 0.0) for i, v in enumerate(VARIANTS)},
    }


def select_questions(questions: list[MirageQuestion], gold: dict[str, list[int]], limit: int | None, seed: int) -> tuple[list[MirageQuestion], int]:
    eligible = [q for q in questions if q.doc_name in gold]
    skipped = len(questions) - len(eligible)
    if not eligible:
        raise DatasetError("no MIRAGE question has a gold chunk in the pool (no chunk's doc_name matches a question's doc_name)")
    if limit is not None and limit < len(eligible):
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(len(eligible), size=limit, replace=False).tolist())
        eligible = [eligible[i] for i in keep]
    return eligible, skipped


def run(options: common.RunOptions, embedder: Embedder, *, pool_path: Path) -> dict[str, Any]:
    questions = load_mirage(options.data_dir)
    pool = load_pool(pool_path)
    gold: dict[str, list[int]] = {}
    for chunk in pool:
        gold.setdefault(chunk.doc_name, []).append(chunk.index)
    chosen, skipped = select_questions(questions, gold, options.limit, options.seed)
    texts = [c.text for c in pool]
    index = build_index(texts, embedder, name="mirage-pool", cache_dir=options.index_cache_dir, quiet=options.quiet)
    vectors = embed_with_progress(embedder, [q.query for q in chosen], desc="embedding queries", quiet=options.quiet)
    k_mixed = max(1, min(options.top_k, index.size))
    _, ids = index.search(vectors, max(k_mixed, *RETRIEVAL_KS))

    per_k: dict[int, list[Any]] = {k: [] for k in RETRIEVAL_KS}
    for q, row_ids in zip(chosen, ids):
        relevant = [int(i) >= 0 and pool[int(i)].doc_name == q.doc_name for i in row_ids]
        for k in RETRIEVAL_KS:
            per_k[k].append(ranking_scores(relevant, len(gold[q.doc_name]), k))
    retrieval = {str(k): mean_ranking_scores(per_k[k]) for k in RETRIEVAL_KS}

    def fields(q: MirageQuestion, variant: str) -> dict[str, Any]:
        return {"id": q.query_id, "variant": variant, "doc_name": q.doc_name, "gold_answers": list(q.answers), "source": q.source}

    mixed_docs = [[texts[int(i)] for i in row_ids[:k_mixed] if i >= 0] for row_ids in ids]
    oracle_docs = [[texts[i] for i in gold[q.doc_name]] for q in chosen]
    data: dict[str, Any] = {
        "experiment": "mirage",
        "no_llm": options.no_llm,
        "n": len(chosen),
        "pool": {"path": str(pool_path), "chunks": len(pool), "documents": len(gold)},
        "questions_without_gold_in_pool": skipped,
        "sample": {"limit": options.limit, "seed": options.seed},
        "embedder": embedder.name,
        "retrieval": retrieval,
        "top_k_mixed": k_mixed,
    }
    sections: list[str] = [_retrieval_markdown(retrieval)]

    records: list[dict[str, Any]] = []
    plots: list[str] = []
    if options.no_llm:
        items = [common.interaction(q.query, docs) for q, docs in zip(chosen, mixed_docs)]
        assessments = common.score_offline(items, embedder, options.config, desc="scoring QRD", quiet=options.quiet, jobs=options.jobs)
        records = [common.offline_record(fields(q, "mixed"), item, a) for q, item, a in zip(chosen, items, assessments)]
        data["auc"] = {}
    else:
        records, plots = _generate_and_judge(options, embedder, chosen, oracle_docs, mixed_docs, k_mixed, fields, data, sections)
    common.write_jsonl(options.out_dir / "scored.jsonl", records)
    head = common.header(
        "ragtap experiment mirage",
        [
            f"Questions: `{options.data_dir / MIRAGE}` ({len(chosen)} used; {skipped} have no gold chunk in the pool). "
            f"Pool: `{pool_path}` ({len(pool)} chunks, {len(gold)} documents). Embedder: {embedder.name}; mixed = top-{k_mixed}.",
            "Correct = any gold alias (lower-cased) is a substring of the lower-cased answer.",
        ],
    )
    write_report(options.out_dir, head, sections, data, plots)
    return data


def _retrieval_markdown(retrieval: dict[str, dict[str, float]]) -> str:
    lines = [
        "## Retriever over the pool (relevant = same doc_name)",
        "",
        "| k | precision | recall | F1 | NDCG | hit rate |",
        "|---|---|---|---|---|---|",
    ]
    for k in RETRIEVAL_KS:
        r = retrieval[str(k)]
        lines.append(f"| {k} | {r['precision']:.4f} | {r['recall']:.4f} | {r['f1']:.4f} | {r['ndcg']:.4f} | {r['hit']:.4f} |")
    lines.append("")
    lines.append("MIRAGE paper, top-5 recall over its 37,800-chunk pool: BGE-base .8925, e5-large .9297, nv-embed-v2 .9641, Contriever .7143.")
    return "\n".join(lines)


def _adaptability_markdown(a: dict[str, Any], failures: int) -> str:
    ad_md = [
        "## Adaptability (MIRAGE)",
        "",
        "| metric | value |",
        "|---|---|",
        f"| noise vulnerability (lower is better) | {a['noise_vulnerability']:.4f} |",
        f"| context acceptability (higher is better) | {a['context_acceptability']:.4f} |",
        f"| context insensitivity (lower is better) | {a['context_insensitivity']:.4f} |",
        f"| context misinterpretation (lower is better) | {a['context_misinterpretation']:.4f} |",
        f"| sum (must be 1) | {a['sum']:.4f} |",
        "",
        "Accuracy by setting: " + ", ".join(f"{v} {a['accuracy'][v]:.4f}" for v in VARIANTS) + ".",
        "",
        "Groups G(base, oracle, mixed): " + ", ".join(f"{g} {c}" for g, c in a["groups"].items()) + ".",
        "",
        "MIRAGE paper (GPT-4o, top-5 nv-embed-v2): noise vulnerability 10.64%, acceptability 80.50%, insensitivity 8.29%, misinterpretation 0.57%.",
    ]
    if failures:
        ad_md.append(f"\n{failures} requests failed after retries; their questions are left out (rerun to retry them).")
    return "\n".join(ad_md)


def _generate_and_judge(options: common.RunOptions, embedder: Embedder, chosen: list[MirageQuestion], oracle_docs: list[list[str]],
                        mixed_docs: list[list[str]], k_mixed: int, fields: Any, data: dict[str, Any], sections: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The three MIRAGE settings through ragtap's proxy, the adaptability groups, and whether ragtap's scores flag
    the wrong answers of the mixed setting.  Adds to `data` and `sections`; returns the records and plots."""
    plots: list[str] = []
    assert options.generation is not None
    requests = []
    for q, oracle, mixed in zip(chosen, oracle_docs, mixed_docs):
        requests.append(GenerationRequest(f"mirage:{q.query_id}:base", q.query, (), fields(q, "base")))
        requests.append(GenerationRequest(f"mirage:{q.query_id}:oracle", q.query, tuple(oracle), fields(q, "oracle")))
        requests.append(GenerationRequest(f"mirage:{q.query_id}:mixed:k{k_mixed}", q.query, tuple(mixed), fields(q, "mixed")))
    run_ = asyncio.run(
        generate(requests, options.generation, options.config, embedder, options.generation_cache, desc="mirage via ragtap", quiet=options.quiet)
    )
    by_key = {(r["id"], r["variant"]): r for r in run_.records}
    outcomes = []
    for q in chosen:
        triple = [by_key.get((q.query_id, v)) for v in VARIANTS]
        if any(t is None for t in triple):
            continue  # a failed request: the question is left out (rerun to retry)
        correct = tuple(loose_match(t.get("answer"), q.answers) for t in triple)  # type: ignore[union-attr]
        for t, c in zip(triple, correct):
            t["correct"] = c  # type: ignore[index]
            t["label"] = not c  # type: ignore[index]  # positive = a wrong answer
        outcomes.append(correct)
    records = [r for r in run_.records if "correct" in r]
    data["n"] = len(outcomes)
    data["adaptability"] = adaptability(outcomes)  # type: ignore[arg-type]
    data["generation"] = {"upstream": options.generation.upstream, "model": options.generation.model, "sent": run_.sent, "cached": run_.cached, "failed": len(run_.failures)}
    sections.insert(0, _adaptability_markdown(data["adaptability"], len(run_.failures)))
    # Do ragtap's scores predict a wrong answer with noisy (mixed) context?
    mixed_records = [r for r in records if r["variant"] == "mixed"]
    if mixed_records:
        report = build_report(
            [r["label"] for r in mixed_records],
            [common.scores_of(r) for r in mixed_records],
            title="MIRAGE mixed setting: do ragtap's scores flag wrong answers?",
            positive_name="wrong answer",
            verdicts=[r.get("verdict") for r in mixed_records],
            class_names=("wrong", "right"),
        )
        scored = report.as_dict()
        data["auc"] = scored["auc"]
        data["mixed_scores"] = {k: scored[k] for k in ("n", "positives", "auc", "best", "verdicts", "threshold_table")}
        sections.append(report.markdown(scored))
        plots = report.plot(options.out_dir, prefix="mixed_") if options.plots else []
    return records, plots
