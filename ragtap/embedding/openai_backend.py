"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (e.g. text-embedding-3-small, the thesis's
setting), through the official SDK's synchronous client."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai

from ragtap.embedding.base import l2_normalise

# Output sizes of OpenAI's own models, so `dim` is known without a request; any other model is probed once.
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """Embeds through `client.embeddings.create`, `batch_size` texts per request.

    Vectors are re-normalised here even though OpenAI's already are: other compatible servers do not
    promise it, and ragtap's cosines assume unit rows.  `dimensions` is sent only when given (only
    text-embedding-3 and later accept it).  The SDK retries transient failures `max_retries` times.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        *,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not api_key:
            # The SDK refuses an empty key too, but its message points at OPENAI_API_KEY, which ragtap may not use.
            raise ValueError(
                f"no API key for the embeddings endpoint {base_url}; for a server that does not check keys, "
                "pass any placeholder"
            )
        # Shortened text-embedding-3 vectors are a different space from the full ones, so `dimensions` is part
        # of the name (which keys caches) whenever it is set.
        self.name = f"openai:{model}" if dimensions is None else f"openai:{model}:{dimensions}"
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._dim = dimensions or KNOWN_DIMENSIONS.get(model)
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)

    @property
    def dim(self) -> int:
        """The vector size; for a model not in KNOWN_DIMENSIONS the first access costs one request."""
        if self._dim is None:
            self._dim = self._request(["dimension probe"]).shape[1]
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        vectors = np.concatenate(batches)
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise ValueError(f"{self.name} returned {vectors.shape[1]}-dimensional vectors, expected {self._dim}")
        return vectors

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        options = {} if self.dimensions is None else {"dimensions": self.dimensions}
        # The SDK asks for base64 unless told otherwise; plain floats are what every compatible server speaks.
        response = self._client.embeddings.create(
            model=self.model, input=list(texts), encoding_format="float", **options
        )
        # The API's contract is the `index` field, not the position in `data`.
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(texts))):
            raise ValueError(f"{self.name} returned {len(data)} embeddings for {len(texts)} inputs")
        return l2_normalise(np.array([item.embedding for item in data], dtype=np.float32))
