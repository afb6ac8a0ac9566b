"""QRD's labelled pairs for `ragtap experiment thresholds`: a fit sample and a held-out sample of each source,
scored exactly as ragtap scores QRD (pipeline/batch.py: the passages, then windows of the passage closest to the
question).

cloud FAQ (the thesis protocol): an aws question against its top-1 answer from the aws-answer index (pass), a
    gcp/ibm question, prefixed "In <source> service, ", against its top-1 aws answer (fail).  Fit: `n` questions
    (seed); held-out: as many other questions (seed + 1).  The answers are single sentences of ~20 words.
SQuAD 2.0: an answerable question against its own paragraph alone (pass) and against the three paragraphs of
    *other articles* that a dense retriever (the same embedder, best passage of each paragraph) ranks first for
    it (fail: what a corpus without the answer returns, neighbouring topics: the hard case).  Two diagnostics:
    one random paragraph of another article (fail; separable by almost any threshold, so it says little about
    where the threshold belongs), and, for the questions whose own paragraph the retriever ranks in its top 3
    over all articles, those 3 paragraphs (pass: the realistic case, where QRD's windows go into the closest
    passage, which is not always the own paragraph's).  The 35 articles are split in two halves (seeded):
    questions on one half are the fit sample, questions on the other the held-out one; the other-article
    paragraphs may come from either half (they are inputs, not labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.evaluation.datasets import SquadQuestion, load_cloud_faq, load_squad2
from ragtap.evaluation.pairs import PairSet
from ragtap.evaluation.retrieval import build_index, embed_with_progress
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.scoring.passages import split_passages
from ragtap.types import Document, Interaction

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

RETRIEVED = 3  # other-article paragraphs a question is given in the SQuAD fail pairs
_BATCH = 256


@dataclass(frozen=True, slots=True)
class QrdItem:
    """One question with the documents it is scored against."""

    question: str
    documents: tuple[str, ...]


def score_qrd(items: Sequence[QrdItem], embedder: Embedder, window_words: int, *, desc: str = "scoring QRD", quiet: bool = False) -> list[float]:
    """QRD of each item through ragtap's scoring path (no answer: only the question and the documents count)."""
    from tqdm import tqdm

    policy = ScoringPolicy(DEFAULT_THRESHOLDS, claim_level=False, qrd_window_words=window_words)
    out: list[float] = []
    with tqdm(total=len(items), desc=desc, unit="pair", disable=quiet) as bar:
        for start in range(0, len(items), _BATCH):
            part = items[start : start + _BATCH]
            interactions = [Interaction(question=i.question, documents=tuple(Document(d) for d in i.documents), answer=None) for i in part]
            out.extend(float(a.scores.qrd) for a in assess_batch(interactions, embedder, policy))  # type: ignore[arg-type]
            bar.update(len(part))
    return out


def faq_pairs(data_dir: Path, embedder: Embedder, n: int, seed: int, window_words: int, cache_dir: Path | None, source_prefix: bool, quiet: bool) -> list[PairSet]:
    """The cloud-FAQ fit set and its held-out twin (other questions, seed + 1)."""
    from ragtap.evaluation.experiments import cloud_faq

    rows = load_cloud_faq(data_dir)
    corpus = [r.answer for r in rows if r.source == cloud_faq.CORPUS_SOURCE]
    index = build_index(corpus, embedder, name="cloud-faq-aws", cache_dir=cache_dir, quiet=quiet)
    fit = cloud_faq.sample(rows, n, seed)
    taken = {r.index for r in fit}
    held = cloud_faq.sample([r for r in rows if r.index not in taken], n, seed + 1)
    note = "top-1 aws answer" + (", gcp/ibm questions prefixed 'In <source> service, '" if source_prefix else "")
    out = []
    for chosen, held_out in ((fit, False), (held, True)):
        questions = [cloud_faq.question_text(r, source_prefix) for r in chosen]
        vectors = embed_with_progress(embedder, questions, desc="embedding FAQ questions", quiet=quiet)
        _, ids = index.search(vectors, 1)
        qrd = score_qrd([QrdItem(q, (corpus[int(i[0])],)) for q, i in zip(questions, ids)], embedder, window_words, quiet=quiet)
        pair_set = PairSet("qrd", "cloud_faq" + (" held-out" if held_out else ""), note=note, used=not held_out, held_out=held_out)
        for row, score in zip(chosen, qrd):
            (pair_set.fail_scores if row.source != cloud_faq.CORPUS_SOURCE else pair_set.pass_scores).append(score)
        out.append(pair_set)
    return out


class _ParagraphRetriever:
    """Dense retrieval over SQuAD's paragraphs: a paragraph scores its best passage's cosine with the question."""

    def __init__(self, paragraphs: Sequence[str], embedder: Embedder, quiet: bool) -> None:
        passages = [(i, p.text) for i, text in enumerate(paragraphs) for p in split_passages(text)]
        self.owner = np.array([i for i, _ in passages])
        self.vectors = embed_with_progress(embedder, [t for _, t in passages], desc="embedding SQuAD paragraphs", quiet=quiet)
        self.count = len(paragraphs)

    def ranked(self, question: np.ndarray, allowed: np.ndarray) -> list[int]:
        best = np.full(self.count, -np.inf)
        np.maximum.at(best, self.owner, self.vectors @ question)
        best[~allowed] = -np.inf
        return [int(i) for i in np.argsort(-best, kind="stable") if allowed[i]]


def squad_pairs(data_dir: Path, embedder: Embedder, n: int, seed: int, window_words: int, quiet: bool) -> list[PairSet]:
    """SQuAD fit and held-out sets (articles split in halves), each with its random-paragraph diagnostic."""
    questions = [q for q in load_squad2(data_dir) if not q.is_impossible]
    text = {q.paragraph: q.context for q in questions}
    article = {q.paragraph: q.title for q in questions}
    paragraph_ids = sorted(text)
    title = np.array([article[p] for p in paragraph_ids])
    titles = sorted(set(title.tolist()))
    rng = np.random.default_rng(seed)
    fit_titles = {titles[i] for i in rng.permutation(len(titles))[: max(1, len(titles) // 2)]}
    retriever = _ParagraphRetriever([text[p] for p in paragraph_ids], embedder, quiet)
    out = []
    for held_out in (False, True):
        pool = [q for q in questions if (q.title in fit_titles) != held_out]
        chosen: list[SquadQuestion] = [pool[int(i)] for i in rng.permutation(len(pool))[:n]]
        vectors = embed_with_progress(embedder, [q.question for q in chosen], desc="embedding SQuAD questions", quiet=quiet)
        gold, retrieved, random, with_gold = [], [], [], []
        everything = np.ones(len(paragraph_ids), dtype=bool)
        for q, vector in zip(chosen, vectors):
            others = title != q.title
            ranked = retriever.ranked(vector, others)
            candidates = np.flatnonzero(others)
            gold.append(QrdItem(q.question, (q.context,)))
            retrieved.append(QrdItem(q.question, tuple(text[paragraph_ids[i]] for i in ranked[:RETRIEVED])))
            random.append(QrdItem(q.question, (text[paragraph_ids[int(candidates[rng.integers(len(candidates))])]],)))
            top = [paragraph_ids[i] for i in retriever.ranked(vector, everything)[:RETRIEVED]]
            if q.paragraph in top:
                with_gold.append(QrdItem(q.question, tuple(text[p] for p in top)))
        def scored(items: list[QrdItem], what: str) -> list[float]:
            return score_qrd(items, embedder, window_words, desc=f"scoring QRD, {what}", quiet=quiet)

        own, other_articles = scored(gold, "own paragraph"), scored(retrieved, "retrieved")
        suffix = " held-out" if held_out else ""
        sets = [
            ("squad2 other articles, retrieved", own, other_articles, f"own paragraph vs the top {RETRIEVED} paragraphs of other articles", not held_out),
            (f"squad2 top {RETRIEVED} holding the own paragraph", scored(with_gold, f"top {RETRIEVED}") if with_gold else [], other_articles,
             f"the top {RETRIEVED} over all articles when they hold the own paragraph (diagnostic) vs as above", False),
            ("squad2 other article, random", own, scored(random, "random"), "own paragraph vs a random paragraph of another article (diagnostic)", False),
        ]
        out += [
            PairSet("qrd", source + suffix, pass_scores=passing, fail_scores=failing, note=note, used=used, held_out=held_out)
            for source, passing, failing, note, used in sets
            if passing  # a tiny sample may have no question whose own paragraph is in the top 3
        ]
    return out
