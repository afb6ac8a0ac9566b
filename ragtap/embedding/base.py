"""The interface every embedder implements, and the normalisation they share.

ragtap scores answers by cosine similarity, so every embedder returns unit-length rows: a cosine is then a
plain dot product and the scoring core never has to normalise again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    `name` identifies the vector space (model and backend, e.g. "all-MiniLM-L6-v2@onnx"): vectors from
    embedders with different names must never be compared or cached together.  `embed` is synchronous and
    CPU- or I/O-bound; callers on the event loop run it in a worker thread.  Implementations must be safe to
    call from several threads at once.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dim), row i embedding texts[i]; (0, dim) for no texts."""
        ...


@runtime_checkable
class WindowEmbedder(Embedder, Protocol):
    """An embedder with a cheaper way to embed QRD's windows (many short texts at once): `embed_windows` may give
    other vectors than `embed`, of the same space, but a text must get the same vector whatever it is embedded
    with (the embedding cache and `ragtap score --jobs` rely on it)."""

    def embed_windows(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_windows(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """QRD's windows: through the embedder's own `embed_windows` where it has one, else as any other texts."""
    if isinstance(embedder, WindowEmbedder):
        return embedder.embed_windows(texts)
    return embedder.embed(texts)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length, as float32.

    The floor on the norm mirrors `torch.nn.functional.normalize` (eps=1e-12), so an all-zero row stays zero
    instead of becoming NaN.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))
