"""The thesis's cloud-platform FAQ experiment: only the AWS FAQ answers are indexed (faiss, ragtap's embedder);
each question retrieves its top-k answers.  Questions from aws are answerable (negative class); questions from
gcp and ibm are unanswerable from this corpus (positive class, "poor generation").

Default sample: 400 questions, 247 gcp/ibm and 153 aws (the thesis's numbers), seeded.  As in the thesis's
worked examples ("In ibm service, can i install my own hadoop stack components?"), an unanswerable question
is prefixed with its platform, "In <source> service, ", so that it is unanswerable by construction and not
just by label; `source_prefix=False` sends the bare question.

Retrieval hit rate: for an aws question, a hit at k means its own FAQ answer is among the top k.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragtap.evaluation import common
from ragtap.evaluation.datasets import CLOUD_FAQ, DatasetError, FaqRow, load_cloud_faq, sample_two_classes
from ragtap.evaluation.generate import GenerationRequest, generate
from ragtap.evaluation.report import build_report, write_report
from ragtap.evaluation.retrieval import build_index

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

DEFAULT_N = 400
POSITIVE_SHARE = 247 / 400
CORPUS_SOURCE = "aws"
UNANSWERABLE_SOURCES = ("gcp", "ibm")
HIT_KS = (1, 3, 5, 10)


def question_text(row: FaqRow, source_prefix: bool) -> str:
    if source_prefix and row.source != CORPUS_SOURCE:
        return f"In {row.source} service, {row.question}"
    return row.question


def sample(rows: list[FaqRow], n: int, seed: int) -> list[FaqRow]:
    unanswerable = [i for i, r in enumerate(rows) if r.source in UNANSWERABLE_SOURCES]
    answerable = [i for i, r in enumerate(rows) if r.source == CORPUS_SOURCE]
    pos, neg = sample_two_classes(unanswerable, answerable, n, POSITIVE_SHARE, seed)
    return [rows[i] for i in sorted(pos + neg)]


def retrieve(
    rows: list[FaqRow], chosen: list[FaqRow], embedder: Embedder, options: common.RunOptions, source_prefix: bool
) -> tuple[list[str], np.ndarray, np.ndarray, dict[int, int], Any]:
    corpus_rows = [r for r in rows if r.source == CORPUS_SOURCE]
    if not corpus_rows:
        raise DatasetError(f"{options.data_dir / CLOUD_FAQ}: no '{CORPUS_SOURCE}' rows to index")
    corpus = [r.answer for r in corpus_rows]
    position = {r.index: i for i, r in enumerate(corpus_rows)}
    index = build_index(corpus, embedder, name="cloud-faq-aws", cache_dir=options.index_cache_dir, quiet=options.quiet)
    questions = [question_text(r, source_prefix) for r in chosen]
    from ragtap.evaluation.retrieval import embed_with_progress

    vectors = embed_with_progress(embedder, questions, desc="embedding questions", quiet=options.quiet)
    sims, ids = index.search(vectors, max(options.top_k, *HIT_KS))
    return corpus, sims, ids, position, index


def run(options: common.RunOptions, embedder: Embedder, *, source_prefix: bool = True) -> dict[str, Any]:
    rows = load_cloud_faq(options.data_dir)
    chosen = sample(rows, options.limit or DEFAULT_N, options.seed)
    corpus, sims, ids, position, index = retrieve(rows, chosen, embedder, options, source_prefix)
    k = max(1, min(options.top_k, index.size))

    hits, ranks, fields_list = _own_answer_ranks(chosen, ids, position)
    documents = [[corpus[int(i)] for i in row_ids[:k] if i >= 0] for row_ids in ids]
    questions = [question_text(r, source_prefix) for r in chosen]

    notes: list[str] = []
    if options.no_llm:
        items = [common.interaction(q, docs) for q, docs in zip(questions, documents)]
        assessments = common.score_offline(items, embedder, options.config, desc="scoring QRD", quiet=options.quiet, jobs=options.jobs)
        records = [common.offline_record(f, item, a) for f, item, a in zip(fields_list, items, assessments)]
    else:
        assert options.generation is not None
        requests = [GenerationRequest(f"cloud-faq:{f['id']}:k{k}", q, tuple(docs), f) for f, q, docs in zip(fields_list, questions, documents)]
        run_ = asyncio.run(
            generate(requests, options.generation, options.config, embedder, options.generation_cache, desc="cloud-faq via ragtap", quiet=options.quiet)
        )
        records = run_.records
        generation_counts, generation_notes = common.generation_summary(run_, options.generation, options.generation_cache)
        notes += generation_notes
    common.write_jsonl(options.out_dir / "scored.jsonl", records)

    labels = [bool(r["label"]) for r in records]
    report = build_report(
        labels,
        [common.scores_of(r) for r in records],
        title="Cloud FAQ: gcp/ibm questions = unanswerable" + (" (no LLM: QRD only)" if options.no_llm else ""),
        positive_name="unanswerable",
        verdicts=None if options.no_llm else [r.get("verdict") for r in records],
        class_names=("unanswerable (gcp/ibm)", "answerable (aws)"),
    )
    report.notes += notes
    retrieval = _retrieval_summary(hits, ranks, fields_list, index, k)
    data = report.as_dict()
    data.update(
        {
            "experiment": "cloud-faq",
            "no_llm": options.no_llm,
            "sample": {"requested": options.limit or DEFAULT_N, "seed": options.seed, "positive_share": POSITIVE_SHARE, "source_prefix": source_prefix},
            "embedder": embedder.name,
            "retrieval": retrieval,
            "thresholds_configured": {m: options.config.thresholds.of(m) for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard")},
        }
    )
    if options.generation is not None and not options.no_llm:
        data["generation"] = {"upstream": options.generation.upstream, "model": options.generation.model, **generation_counts}
    plots = report.plot(options.out_dir) if options.plots else []
    head = common.header(
        "ragtap experiment cloud-faq",
        [
            f"Data: `{options.data_dir / CLOUD_FAQ}`; corpus = the aws FAQ answers; unanswerable = gcp and ibm questions"
            + (" (prefixed \"In <source> service, \" as in the thesis)." if source_prefix else " (bare questions)."),
            f"Sample: {len(records)} questions ({sum(labels)} unanswerable), seed {options.seed}. Embedder: {embedder.name}.",
            "Thesis (GPT-3.5-turbo, text-embedding-3, 400 questions): AUC of the primary-metric rule 0.8836.",
        ],
    )
    write_report(options.out_dir, head, [_retrieval_markdown(retrieval, index), report.markdown(data)], data, plots)
    return data


def _own_answer_ranks(chosen: Sequence[FaqRow], ids: np.ndarray, position: dict[int, int]) -> tuple[dict[int, list[bool]], list[int | None], list[dict[str, Any]]]:
    """For each question: where its own FAQ answer ranks among the retrieved (aws questions only have one), the
    hit flags at each k, and the record fields."""
    hits: dict[int, list[bool]] = {h: [] for h in HIT_KS}
    ranks: list[int | None] = []
    fields_list = []
    for row, row_ids in zip(chosen, ids):
        own = position.get(row.index)
        rank = None
        if own is not None:
            found = np.nonzero(row_ids == own)[0]
            rank = int(found[0]) + 1 if found.size else None
            for h in HIT_KS:
                hits[h].append(rank is not None and rank <= h)
        ranks.append(rank)
        fields_list.append(
            {
                "id": f"cloud-faq-{row.index}",
                "label": row.source != CORPUS_SOURCE,
                "source": row.source,
                "faq_question": row.question,
                "own_answer_rank": rank,
            }
        )
    return hits, ranks, fields_list


def _retrieval_summary(hits: dict[int, list[bool]], ranks: list[int | None], fields_list: list[dict[str, Any]], index: Any, k: int) -> dict[str, Any]:
    answerable = len(hits[1])
    return {
        "answerable_questions": answerable,
        "corpus_size": index.size,
        "top_k_sent": k,
        "hit_rate": {str(h): (float(np.mean(hits[h])) if answerable else None) for h in HIT_KS},
        "mrr_at_10": float(np.mean([1.0 / r if r is not None and r <= 10 else 0.0 for r, f in zip(ranks, fields_list) if not f["label"]])) if answerable else None,
        "index_cache": str(index.path) if index.path else None,
        "index_from_cache": index.from_cache,
    }


def _retrieval_markdown(retrieval: dict[str, Any], index: Any) -> str:
    return "\n".join([
        "## Retrieval (aws questions: is the question's own FAQ answer in the top k?)",
        "",
        "| k | " + " | ".join(str(h) for h in HIT_KS) + " |",
        "|---|" + "---|" * len(HIT_KS),
        "| hit rate | " + " | ".join(common_fmt(retrieval["hit_rate"][str(h)]) for h in HIT_KS) + " |",
        "",
        f"MRR@10 {common_fmt(retrieval['mrr_at_10'])} over {retrieval['answerable_questions']} aws questions; corpus: {index.size} aws answers; "
        f"{retrieval['top_k_sent']} document(s) sent per question; index {'loaded from' if index.from_cache else 'written to'} `{index.path}`.",
    ])


def common_fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
