"""A LangChain RAG app as its users write it, run inside the pinned LangChain venv by tests/test_frameworks.py.

    python langchain_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

Only the base URL points it at ragtap; every prompt is LangChain's own (`ChatPromptTemplate`, `create_agent`).
The documents are synthetic (no dataset text).
"""

from __future__ import annotations

import json
import sys

import httpx
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

QUESTION = "Which port does the billing service listen on?"
DOCS = [
    Document(page_content="The billing service listens on port 8443 behind the internal load balancer.", metadata={"source": "wiki/billing.md"}),
    Document(page_content="The billing service is owned by the Falcon team; on-call rotates every Monday.", metadata={"source": "wiki/owners.md"}),
]


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(doc.page_content for doc in docs)


def main() -> None:
    base_url, layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    sent: list[dict] = []
    client = httpx.Client(timeout=30, event_hooks={"request": [lambda r: sent.append(json.loads(r.read()))]})
    # "..._responses": the same app on the Responses API (`use_responses_api`, langchain-openai's default for newer models)
    responses = layout.endswith("_responses")
    layout = layout.removesuffix("_responses")
    llm = ChatOpenAI(model="gpt-test", base_url=base_url, api_key="sk-test", http_client=client, max_retries=0,
                     streaming=stream, use_responses_api=responses)
    if layout == "lcel_system":  # the LangChain RAG tutorial's chain: system prompt with {context}, human {question}
        prompt = ChatPromptTemplate.from_messages([
            ("system", "You are an assistant for question-answering tasks. Use the following pieces of retrieved "
                       "context to answer the question. If you don't know the answer, say that you don't know. Use "
                       "three sentences maximum and keep the answer concise.\n\n{context}"),
            ("human", "{question}"),
        ])
        chain = prompt | llm | StrOutputParser()
        inputs = {"context": format_docs(DOCS), "question": QUESTION}
        answer = "".join(chain.stream(inputs)) if stream else chain.invoke(inputs)
    elif layout == "lcel_human":  # "Answer the question based only on the following context" (LCEL cookbook)
        prompt = ChatPromptTemplate.from_template(
            "Answer the question based only on the following context:\n{context}\n\nQuestion: {question}\n")
        chain = prompt | llm | StrOutputParser()
        inputs = {"context": format_docs(DOCS), "question": QUESTION}
        answer = "".join(chain.stream(inputs)) if stream else chain.invoke(inputs)
    elif layout == "agent_tool":  # LangChain v1 create_agent with a retrieval tool (the RAG agent tutorial)
        from langchain.agents import create_agent

        @tool(response_format="content_and_artifact")
        def retrieve_context(query: str):
            """Retrieve information to help answer a query."""
            serialized = "\n\n".join(f"Source: {doc.metadata}\nContent: {doc.page_content}" for doc in DOCS)
            return serialized, DOCS

        agent = create_agent(llm, [retrieve_context], system_prompt="You have access to a tool that retrieves "
                             "context from the wiki. Use the tool to help answer user queries.")
        result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
        answer = result["messages"][-1].content
    elif layout == "agent_middleware":  # LangChain v1 RAG agent: context injected into the system prompt
        from langchain.agents import create_agent
        from langchain.agents.middleware import ModelRequest, dynamic_prompt

        @dynamic_prompt
        def prompt_with_context(request: ModelRequest) -> str:
            return "You are a helpful assistant. Use the following context in your response:\n\n" + format_docs(DOCS)

        agent = create_agent(llm, tools=[], middleware=[prompt_with_context])
        result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
        answer = result["messages"][-1].content
    else:
        raise SystemExit(f"unknown layout {layout!r}")
    print(json.dumps({"answer": answer, "requests": sent}))


if __name__ == "__main__":
    main()
