"""An in-memory LRU in front of any embedder.

RAG apps retrieve the same documents again and again, so most document texts ragtap scores have been
embedded before; caching by text skips the model for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence

import numpy as np
from cachetools import LRUCache

from ragtap.embedding.base import Embedder, embed_windows


class CachedEmbedder:
    """Wraps an embedder with an LRU of up to `max_entries` vectors, keyed by the exact text.

    Each call looks every text up, then embeds the distinct misses in one call to the inner embedder.  The
    lock guards only the bookkeeping; embedding runs outside it, so concurrent callers do not wait for one
    another's model runs (two callers missing on the same text may then both embed it, which is harmless).

    `misses` counts texts sent to the inner embedder; `hits` counts texts served without it, including
    repeats of a text within one call.  So hits + misses is the number of texts requested.
    """

    def __init__(self, inner: Embedder, max_entries: int = 50_000) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.inner = inner
        self.name = inner.name  # same vectors as the inner embedder, so the same vector space
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        # cachetools' LRU: a read refreshes an entry, an insert beyond max_entries evicts the least recent one.
        # Keyed by the text, or by ("window", text) for `embed_windows`' vectors.
        self._entries: LRUCache[Hashable, np.ndarray] | None = LRUCache(maxsize=max_entries) if max_entries else None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __len__(self) -> int:
        return len(self._entries) if self._entries is not None else 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, lambda text: text, self.inner.embed)

    def embed_windows(self, texts: Sequence[str]) -> np.ndarray:
        """QRD's windows (`base.embed_windows`), cached apart from `embed`'s vectors: the inner embedder may give a
        window another vector than the same text gets from `embed`."""
        return self._cached(texts, lambda text: ("window", text), lambda missed: embed_windows(self.inner, missed))

    def _cached(self, texts: Sequence[str], key_of: Callable[[str], Hashable], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        pending: dict[str, list[int]] = {}  # missed text -> the rows it fills, in first-seen order
        with self._lock:
            for row, text in enumerate(texts):
                vector = self._entries.get(key_of(text)) if self._entries is not None else None
                if vector is not None:
                    out[row] = vector
                elif text in pending:
                    pending[text].append(row)
                else:
                    pending[text] = [row]
            self.misses += len(pending)
            self.hits += len(texts) - len(pending)
        if not pending:
            return out

        vectors = compute(list(pending))
        with self._lock:
            for (text, rows), vector in zip(pending.items(), vectors, strict=True):
                out[rows] = vector
                if self._entries is not None:
                    # A copy, so the cache does not keep the inner embedder's whole batch array alive.
                    self._entries[key_of(text)] = vector.copy()
        return out
