"""Builds the configured embedder, always behind the LRU cache."""

from __future__ import annotations

from typing import Any

from ragtap.embedding.base import Embedder
from ragtap.embedding.cache import CachedEmbedder

KINDS: tuple[str, ...] = ("minilm", "openai")


def make_embedder(kind: str, *, cache_size: int = 50_000, **options: Any) -> CachedEmbedder:
    """`kind` is "minilm" (local, the default) or "openai" (a remote `/v1/embeddings`); `options` go to the
    backend's constructor (`MiniLMEmbedder` or `OpenAIEmbedder`).

    Backends are imported here, on demand: importing the `openai` SDK alone takes about a second, and the
    MiniLM backend pulls in onnx and onnxruntime, neither of which the other kind needs.
    """
    inner: Embedder
    if kind == "minilm":
        from ragtap.embedding.minilm import MiniLMEmbedder

        inner = MiniLMEmbedder(**options)
    elif kind == "openai":
        from ragtap.embedding.openai_backend import OpenAIEmbedder

        inner = OpenAIEmbedder(**options)
    else:
        raise ValueError(f"unknown embedder kind {kind!r}; expected one of {', '.join(KINDS)}")
    return CachedEmbedder(inner, max_entries=cache_size)
