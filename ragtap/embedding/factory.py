"""Builds an embedder by name, always behind the LRU cache.

Names map to factories in a registry: "minilm" (local, the default: int8 weights, see `minilm_int8`),
"minilm-fp32" (the same model in float32, the reference) and "openai" (a remote `/v1/embeddings`) are built in; `register_embedder` adds others (tests register their deterministic doubles here and select them by
name through the config, instead of monkeypatching the wiring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragtap.embedding.base import Embedder
from ragtap.embedding.cache import CachedEmbedder

EmbedderFactory = Callable[..., Embedder]


def _minilm(**options: Any) -> Embedder:
    # Imported on demand: the MiniLM backend pulls in onnx and onnxruntime, which the other kinds do not need.
    from ragtap.embedding.minilm_int8 import MiniLMInt8Embedder

    return MiniLMInt8Embedder(**options)


def _minilm_fp32(**options: Any) -> Embedder:
    from ragtap.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder(**options)


def _openai(**options: Any) -> Embedder:
    # Importing the `openai` SDK alone takes about a second: only when asked for.
    from ragtap.embedding.openai_backend import OpenAIEmbedder

    return OpenAIEmbedder(**options)


_FACTORIES: dict[str, EmbedderFactory] = {"minilm": _minilm, "minilm-fp32": _minilm_fp32, "openai": _openai}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make `name` selectable as `[scoring] embedder` (or RAGTAP_EMBEDDER).  `factory(**options)` receives the
    options `make_embedder` was given and may ignore them."""
    _FACTORIES[name] = factory


def embedder_kinds() -> tuple[str, ...]:
    return tuple(_FACTORIES)


def make_embedder(kind: str, *, cache_size: int = 50_000, **options: Any) -> CachedEmbedder:
    """`kind` names a registered factory; `options` go to it (`MiniLMEmbedder` or `OpenAIEmbedder` options)."""
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise ValueError(f"unknown embedder kind {kind!r}; expected one of {', '.join(_FACTORIES)}")
    return CachedEmbedder(factory(**options), max_entries=cache_size)
