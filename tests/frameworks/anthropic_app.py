"""A LangChain RAG app on Claude as its users write it (`ChatAnthropic`), run inside the pinned anthropic venv by
tests/test_frameworks_messages.py.

    python anthropic_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ...}

Only the base URL points it at ragtap (as ANTHROPIC_BASE_URL would).  Layouts: `lcel_system`, the LangChain RAG
tutorial's chain (system prompt with {context}, human {question}); `document_blocks`, the documents as Claude's
`document` content blocks before the question.  The documents are synthetic (no dataset text).
"""

from __future__ import annotations

import json
import sys

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate

QUESTION = "Which port does the billing service listen on?"
DOCS = [
    "The billing service listens on port 8443 behind the internal load balancer.",
    "The billing service is owned by the Falcon team; on-call rotates every Monday.",
]


def main() -> None:
    base_url, layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    llm = ChatAnthropic(model="claude-haiku-4-5-20251001", base_url=base_url, api_key="sk-ant-test", max_retries=0,
                        streaming=stream, max_tokens=512)
    if layout == "lcel_system":
        prompt = ChatPromptTemplate.from_messages([
            ("system", "You are an assistant for question-answering tasks. Use the following pieces of retrieved "
                       "context to answer the question. If you don't know the answer, say that you don't know. Use "
                       "three sentences maximum and keep the answer concise.\n\n{context}"),
            ("human", "{question}"),
        ])
        chain = prompt | llm | StrOutputParser()
        inputs = {"context": "\n\n".join(DOCS), "question": QUESTION}
        answer = "".join(chain.stream(inputs)) if stream else chain.invoke(inputs)
    elif layout == "document_blocks":
        blocks = [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": doc}, "title": f"doc{i}"}
                  for i, doc in enumerate(DOCS)]
        message = HumanMessage(content=[*blocks, {"type": "text", "text": QUESTION}])
        chain = llm | StrOutputParser()
        answer = "".join(chain.stream([message])) if stream else chain.invoke([message])
    else:
        raise SystemExit(f"unknown layout {layout}")
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
