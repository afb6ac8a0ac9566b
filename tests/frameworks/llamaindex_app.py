"""A LlamaIndex RAG app as its users write it, run inside the pinned LlamaIndex venv by tests/test_frameworks.py.

    python llamaindex_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

LAYOUT is `query:<response_mode>`, `query:citation` (CitationQueryEngine) or `chat:<chat_mode>`.  Only the base
URL points it at ragtap; every prompt is LlamaIndex's default.  A mock embedding model keeps retrieval offline;
the documents are synthetic.
"""

from __future__ import annotations

import json
import sys

import capture  # noqa: F401  (records the request bodies)
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.llms.openai import OpenAI

QUESTION = "Which port does the billing service listen on?"
TEXTS = [
    "The billing service listens on port 8443 behind the internal load balancer.",
    "The billing service is owned by the Falcon team; on-call rotates every Monday.",
]


class OrderedEmbedding(MockEmbedding):
    """Offline and deterministic: a document's similarity to any query falls with its length, so retrieval
    returns the nodes in one order every run (MockEmbedding's constant vectors tie, and ties break on random ids)."""

    def _vector(self, text: str) -> list[float]:
        return [1.0, len(text) / 100.0] + [0.0] * (self.embed_dim - 2)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def _get_query_embedding(self, query: str) -> list[float]:
        return [1.0] + [0.0] * (self.embed_dim - 1)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def main() -> None:
    base_url, layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    Settings.embed_model = OrderedEmbedding(embed_dim=8)
    Settings.llm = OpenAI(model="gpt-4o-mini", api_base=base_url, api_key="sk-test", max_retries=0, timeout=30)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS])
    kind, mode = layout.split(":")
    if kind == "query":
        if mode == "citation":  # CitationQueryEngine: "Source N:" chunks under its citation template
            from llama_index.core.query_engine import CitationQueryEngine

            engine = CitationQueryEngine.from_args(index, similarity_top_k=2, streaming=stream)
        else:
            engine = index.as_query_engine(response_mode=mode, similarity_top_k=2, streaming=stream)
        response = engine.query(QUESTION)
        answer = "".join(response.response_gen) if stream else str(response)
    else:
        engine = index.as_chat_engine(chat_mode=mode, similarity_top_k=2)
        if stream:
            answer = "".join(engine.stream_chat(QUESTION).response_gen)
        else:
            answer = str(engine.chat(QUESTION))
    print(json.dumps({"answer": answer, "requests": capture.SENT}))


if __name__ == "__main__":
    main()
