"""Text embedders: the vectors whose cosines ragtap's scores are made of.

`make_embedder` is the entry point.  The backends are loaded lazily (PEP 562) so that importing this package
stays cheap: the `openai` SDK and onnx/onnxruntime are imported only by code that uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragtap.embedding.base import Embedder, l2_normalise
from ragtap.embedding.cache import CachedEmbedder
from ragtap.embedding.factory import embedder_kinds, make_embedder, register_embedder

if TYPE_CHECKING:
    from ragtap.embedding.minilm import MiniLMEmbedder, ModelUnavailableError
    from ragtap.embedding.minilm_int8 import MiniLMInt8Embedder
    from ragtap.embedding.openai_backend import OpenAIEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "MiniLMEmbedder",
    "MiniLMInt8Embedder",
    "ModelUnavailableError",
    "OpenAIEmbedder",
    "embedder_kinds",
    "l2_normalise",
    "make_embedder",
    "register_embedder",
]

_LAZY = {
    "MiniLMEmbedder": "ragtap.embedding.minilm",
    "MiniLMInt8Embedder": "ragtap.embedding.minilm_int8",
    "ModelUnavailableError": "ragtap.embedding.minilm",
    "OpenAIEmbedder": "ragtap.embedding.openai_backend",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)
