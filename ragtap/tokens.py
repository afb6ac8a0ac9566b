"""Token counting with tiktoken, offline.

tiktoken downloads an encoding on first use and keeps it in `TIKTOKEN_CACHE_DIR`, named by the sha1 of its URL.
ragtap ships the encodings of OpenAI's chat models (o200k_base, cl100k_base: the very files tiktoken would
download, checked against tiktoken's own sha256 when it loads them) in `ragtap/tokens_data/` under those names
and points `TIKTOKEN_CACHE_DIR` there, as LiteLLM does, so counting never touches the network.  A model whose
encoding is not shipped (older completion models) is counted with o200k_base rather than trigger a download.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

SHIPPED_ENCODINGS = frozenset({"o200k_base", "cl100k_base"})
_FALLBACK = "o200k_base"  # the encoding of the current OpenAI chat models
_DATA = Path(__file__).resolve().parent / "tokens_data"


@lru_cache(maxsize=64)
def _encoding(model: str | None) -> tiktoken.Encoding:
    # A user who set TIKTOKEN_CACHE_DIR keeps it (and must provide the files there).
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_DATA))
    import tiktoken  # loading a table takes ~0.3 s: paid on the first count (the scoring thread warms it up)

    name = _FALLBACK
    if model:
        try:
            name = tiktoken.encoding_name_for_model(model)
        except KeyError:  # unknown model names (local models, aliases) fall back
            pass
    return tiktoken.get_encoding(name if name in SHIPPED_ENCODINGS else _FALLBACK)


def count_tokens(text: str, model: str | None = None) -> int:
    # encode_ordinary: special-token text counted as ordinary text, which is what encode(disallowed_special=())
    # does, without its checks of the special-token arguments.
    return len(_encoding(model).encode_ordinary(text))
