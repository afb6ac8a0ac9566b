"""A Haystack RAG pipeline as the Haystack RAG tutorial builds it (BM25 retriever -> ChatPromptBuilder ->
OpenAIChatGenerator), run inside the pinned Haystack venv by tests/test_frameworks.py.

    python haystack_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

Only the base URL points it at ragtap.  The documents are synthetic; BM25 keeps retrieval offline.
"""

from __future__ import annotations

import json
import sys

import capture  # noqa: F401  (records the request bodies)
from haystack import Document, Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret

QUESTION = "Which port does the billing service listen on?"
TEXTS = [
    "The billing service listens on port 8443 behind the internal load balancer.",
    "The billing service is owned by the Falcon team; on-call rotates every Monday.",
]
TEMPLATE = [ChatMessage.from_user("""
Given the following information, answer the question.

Context:
{% for document in documents %}
    {{ document.content }}
{% endfor %}

Question: {{question}}
Answer:
""")]


def main() -> None:
    base_url, _layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t) for t in TEXTS])
    pieces: list[str] = []
    llm = OpenAIChatGenerator(api_key=Secret.from_token("sk-test"), api_base_url=base_url, model="gpt-4o-mini",
                              streaming_callback=(lambda chunk: pieces.append(chunk.content)) if stream else None)
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=2))
    pipe.add_component("prompt_builder", ChatPromptBuilder(template=TEMPLATE, required_variables=["question", "documents"]))
    pipe.add_component("llm", llm)
    pipe.connect("retriever", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.messages")
    result = pipe.run({"retriever": {"query": QUESTION}, "prompt_builder": {"question": QUESTION}})
    answer = result["llm"]["replies"][0].text
    if stream:
        assert "".join(pieces) == answer, (pieces, answer)
    print(json.dumps({"answer": answer, "requests": capture.SENT}))


if __name__ == "__main__":
    main()
