"""LangGraph agentic RAG as the LangGraph tutorial builds it (docs "Build a custom RAG agent"), run inside the
pinned LangGraph venv by tests/test_frameworks.py.

    python langgraph_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

The graph: `generate_query_or_respond` (the chat model with the retriever tool bound) -> `tools_condition` ->
`retrieve` (ToolNode) -> `grade_documents` (structured output `GradeDocuments`) -> `generate_answer`, or
`rewrite_question` and back to `generate_query_or_respond`.  The prompts are the tutorial's.  Only the base URL
points it at ragtap.  The retriever returns two synthetic documents (no embeddings, no network).
LAYOUT `agentic_rag`; STREAM=1 builds the chat models with streaming=True and runs `graph.stream(...,
stream_mode="messages")`, the tutorial's way of streaming tokens.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

import capture  # noqa: F401  (records the request bodies)
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import create_retriever_tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

QUESTION = "Which port does the billing service listen on?"
DOCS = [
    Document(page_content="The billing service listens on port 8443 behind the internal load balancer."),
    Document(page_content="The billing service is owned by the Falcon team; on-call rotates every Monday."),
]

GRADE_PROMPT = (
    "You are a grader assessing relevance of a retrieved document to a user question. \n "
    "Here is the retrieved document: \n\n {context} \n\n"
    "Here is the user question: {question} \n"
    "If the document contains keyword(s) or semantic meaning related to the user question, grade it as relevant. \n"
    "Give a binary score 'yes' or 'no' score to indicate whether the document is relevant to the question."
)
REWRITE_PROMPT = (
    "Look at the input and try to reason about the underlying semantic intent / meaning.\n"
    "Here is the initial question:"
    "\n ------- \n"
    "{question}"
    "\n ------- \n"
    "Formulate an improved question:"
)
GENERATE_PROMPT = (
    "You are an assistant for question-answering tasks. "
    "Use the following pieces of retrieved context to answer the question. "
    "If you don't know the answer, just say that you don't know. "
    "Use three sentences maximum and keep the answer concise.\n"
    "Question: {question} \n"
    "Context: {context}"
)


class WikiRetriever(BaseRetriever):
    """Offline stand-in for the tutorial's vector store retriever: the same two documents for every query."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(DOCS)


class GradeDocuments(BaseModel):
    """Grade documents using a binary score for relevance check."""

    binary_score: str = Field(description="Relevance score: 'yes' if relevant, or 'no' if not relevant")


def build_graph(base_url: str, stream: bool):  # type: ignore[no-untyped-def]
    retriever_tool = create_retriever_tool(
        WikiRetriever(), "retrieve_wiki_pages", "Search and return information about the team's services.")
    response_model = ChatOpenAI(model="gpt-test", base_url=base_url, api_key="sk-test", max_retries=0, timeout=30,
                                temperature=0, streaming=stream)
    grader_model = ChatOpenAI(model="gpt-test", base_url=base_url, api_key="sk-test", max_retries=0, timeout=30,
                              temperature=0, streaming=stream)

    def generate_query_or_respond(state: MessagesState):  # type: ignore[no-untyped-def]
        response = response_model.bind_tools([retriever_tool]).invoke(state["messages"])
        return {"messages": [response]}

    def grade_documents(state: MessagesState) -> Literal["generate_answer", "rewrite_question"]:
        question = state["messages"][0].content
        context = state["messages"][-1].content
        prompt = GRADE_PROMPT.format(question=question, context=context)
        response = grader_model.with_structured_output(GradeDocuments).invoke([{"role": "user", "content": prompt}])
        return "generate_answer" if response.binary_score == "yes" else "rewrite_question"

    def rewrite_question(state: MessagesState):  # type: ignore[no-untyped-def]
        question = state["messages"][0].content
        response = response_model.invoke([{"role": "user", "content": REWRITE_PROMPT.format(question=question)}])
        return {"messages": [HumanMessage(content=response.content)]}

    def generate_answer(state: MessagesState):  # type: ignore[no-untyped-def]
        question = state["messages"][0].content
        context = state["messages"][-1].content
        prompt = GENERATE_PROMPT.format(question=question, context=context)
        response = response_model.invoke([{"role": "user", "content": prompt}])
        return {"messages": [response]}

    workflow = StateGraph(MessagesState)
    workflow.add_node(generate_query_or_respond)
    workflow.add_node("retrieve", ToolNode([retriever_tool]))
    workflow.add_node(rewrite_question)
    workflow.add_node(generate_answer)
    workflow.add_edge(START, "generate_query_or_respond")
    workflow.add_conditional_edges("generate_query_or_respond", tools_condition, {"tools": "retrieve", END: END})
    workflow.add_conditional_edges("retrieve", grade_documents)
    workflow.add_edge("generate_answer", END)
    workflow.add_edge("rewrite_question", "generate_query_or_respond")
    return workflow.compile()


def main() -> None:
    base_url, layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if layout != "agentic_rag":
        raise SystemExit(f"unknown layout {layout!r}")
    graph = build_graph(base_url, stream)
    inputs = {"messages": [{"role": "user", "content": QUESTION}]}
    if stream:
        # The tokens of the final answer, as an app streams them to its user (generate_answer's messages only).
        tokens = [chunk.content for chunk, meta in graph.stream(inputs, stream_mode="messages")
                  if meta.get("langgraph_node") == "generate_answer" and isinstance(chunk.content, str)]
        answer = "".join(tokens)
    else:
        final = graph.invoke(inputs)["messages"][-1]
        assert isinstance(final, AIMessage)
        answer = final.content
    print(json.dumps({"answer": answer, "requests": capture.SENT}))


if __name__ == "__main__":
    main()
