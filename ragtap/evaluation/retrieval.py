"""A flat inner-product faiss index over ragtap's own embeddings, cached on disk, and retrieval metrics.

The embedder returns unit-length rows, so inner product = cosine and the top-1 similarity of a question is
exactly its QRD against the top-1 document.  The cache key is the embedder's name plus a hash of the texts
in order: another model or other data never reuse an index.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragtap.evaluation.datasets import content_hash
from ragtap.evaluation.extras import require

if TYPE_CHECKING:
    import faiss

    from ragtap.embedding.base import Embedder


def default_cache_dir() -> Path:
    if os.environ.get("RAGTAP_CACHE"):
        return Path(os.environ["RAGTAP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragtap"


def embed_with_progress(embedder: Embedder, texts: Sequence[str], *, desc: str, batch: int = 256, quiet: bool = False) -> np.ndarray:
    from tqdm import tqdm

    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    with tqdm(total=len(texts), desc=desc, unit="text", file=sys.stderr, disable=quiet) as bar:
        for start in range(0, len(texts), batch):
            part = list(texts[start : start + batch])
            out[start : start + len(part)] = embedder.embed(part)
            bar.update(len(part))
    return out


@dataclass(slots=True)
class VectorIndex:
    index: faiss.Index
    key: str
    path: Path | None
    from_cache: bool

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, row indices), each (len(queries), k), best first."""
        k = max(1, min(k, self.size))
        sims, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return sims, ids


def build_index(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    name: str,
    cache_dir: Path | None,
    quiet: bool = False,
) -> VectorIndex:
    """An IndexFlatIP over `texts`, loaded from `cache_dir` when built before for the same embedder and texts."""
    faiss = require("faiss")

    digest = content_hash([embedder.name, *texts])
    key = f"{name}-{digest[:20]}"
    path = None
    if cache_dir is not None:
        path = cache_dir / f"{key}.faiss"
        meta = cache_dir / f"{key}.json"
        if path.is_file() and meta.is_file():
            try:
                info = json.loads(meta.read_text())
                index = faiss.read_index(str(path))
                if info.get("embedder") == embedder.name and info.get("hash") == digest and index.ntotal == len(texts) and index.d == embedder.dim:
                    return VectorIndex(index, key, path, True)
            except (OSError, RuntimeError, ValueError):
                pass  # a broken cache entry is rebuilt
    vectors = embed_with_progress(embedder, texts, desc=f"indexing {name}", quiet=quiet)
    index = faiss.IndexFlatIP(embedder.dim)
    index.add(vectors)
    if cache_dir is not None and path is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        faiss.write_index(index, str(tmp))
        os.replace(tmp, path)
        info = {"embedder": embedder.name, "dim": embedder.dim, "hash": digest, "count": len(texts), "name": name}
        meta_tmp = path.with_suffix(f".json.tmp{os.getpid()}")
        meta_tmp.write_text(json.dumps(info, indent=1))
        os.replace(meta_tmp, path.with_suffix(".json"))
    return VectorIndex(index, key, path, False)


# ------------------------------------------------------------------------------------------------ metrics


@dataclass(frozen=True, slots=True)
class RankingScores:
    precision: float
    recall: float
    f1: float
    ndcg: float
    hit: float


def ranking_scores(relevant: Sequence[bool], total_relevant: int, k: int) -> RankingScores:
    """Binary-relevance metrics of one ranked list cut at k.

    precision = relevant in top-k / k; recall = relevant in top-k / all relevant; F1 their harmonic mean;
    NDCG = DCG / ideal DCG with gains 1/log2(rank + 1); hit = at least one relevant in the top k.
    """
    top = [bool(r) for r in relevant[:k]]
    found = sum(top)
    precision = found / k if k else 0.0
    recall = found / total_relevant if total_relevant else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    dcg = sum(1.0 / math.log2(rank + 2) for rank, rel in enumerate(top) if rel)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(total_relevant, k)))
    return RankingScores(precision, recall, f1, dcg / ideal if ideal else 0.0, 1.0 if found else 0.0)


def mean_ranking_scores(rows: Sequence[RankingScores]) -> dict[str, float]:
    if not rows:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "ndcg": 0.0, "hit": 0.0}
    return {name: float(np.mean([getattr(r, name) for r in rows])) for name in ("precision", "recall", "f1", "ndcg", "hit")}
