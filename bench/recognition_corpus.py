"""A labelled corpus of chat-completions request bodies for measuring recognition: RAG requests in the layouts the
frameworks send (rendered from their default templates, with synthetic documents), and realistic non-RAG
requests (long system prompts, pasted code, pasted article + "summarise this", persona prompts, few-shot
examples, tool schemas, proofreading, personal "context", rules about sources).  All text is synthetic: no
dataset text.  Deterministic: `corpus()` returns the same list every time.

Each item: (label: bool, layout: str, body: dict).  `layout` names the framework layout or the non-RAG kind.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

Body = dict[str, Any]

# ---------------------------------------------------------------------------------------------------- topics
SERVICES = ["billing", "search", "ledger", "checkout", "inventory", "mailer", "auth", "reports", "payroll", "catalog",
            "shipping", "pricing", "notifications", "analytics", "gateway", "scheduler"]
TEAMS = ["Falcon", "Otter", "Birch", "Comet", "Harbor", "Maple", "Quartz", "Summit"]
REGIONS = ["eu-west-1", "us-east-2", "ap-south-1", "eu-central-1"]


def topic(i: int) -> tuple[list[str], list[str]]:
    """(documents, questions) of one synthetic internal-wiki topic."""
    s, team, region = SERVICES[i % len(SERVICES)], TEAMS[i % len(TEAMS)], REGIONS[i % len(REGIONS)]
    port, hours, days = 8000 + 37 * i, 2 + i % 10, 7 + 3 * i
    docs = [
        f"The {s} service listens on port {port} and runs in the {region} region behind the internal load balancer.",
        f"The {s} service is owned by the {team} team. On-call duty rotates every Monday at 09:00 UTC.",
        f"Backups of the {s} database run every {hours} hours and are kept for {days} days in cold storage.",
    ]
    questions = [
        f"Which port does the {s} service listen on?",
        f"who owns the {s} service",
        f"How long are {s} backups kept?",
        f"What region does {s} run in?",
    ]
    return docs, questions


# ------------------------------------------------------------------------------------------- RAG layouts
def _user(text: str, system: str | None = None) -> Body:
    messages = [{"role": "system", "content": system}] if system else []
    return {"model": "gpt-4o-mini", "messages": [*messages, {"role": "user", "content": text}]}


LI_SYSTEM = ("You are an expert Q&A system that is trusted around the world.\nAlways answer the query using the provided "
             "context information, and not prior knowledge.\nSome rules to follow:\n1. Never directly reference the "
             "given context in your answer.\n2. Avoid statements like 'Based on the context, ...' or 'The context "
             "information ...' or anything along those lines.")


def li_node(doc: str, i: int) -> str:
    return f"file_path: /data/wiki/page_{i}.md\n\n{doc}"


def llamaindex_compact(q: str, docs: list[str]) -> Body:
    ctx = "\n\n".join(li_node(d, i) for i, d in enumerate(docs))
    return _user("Context information is below.\n---------------------\n" + ctx + "\n---------------------\nGiven the "
                 "context information and not prior knowledge, answer the query.\nQuery: " + q + "\nAnswer: ", LI_SYSTEM)


def llamaindex_tree_summarize(q: str, docs: list[str]) -> Body:
    return _user("Context information from multiple sources is below.\n---------------------\n" + "\n\n".join(docs) +
                 "\n---------------------\nGiven the information from multiple sources and not prior knowledge, answer "
                 "the query.\nQuery: " + q + "\nAnswer: ", LI_SYSTEM)


def llamaindex_refine(q: str, docs: list[str]) -> Body:
    """CHAT_REFINE_PROMPT (llama-index-core 0.14.25), one chunk per refine call."""
    return _user("You are an expert Q&A system that strictly operates in two modes when refining existing answers:\n"
                 "1. **Rewrite** an original answer using the new context.\n2. **Repeat** the original answer if the new "
                 "context isn't useful.\nNever reference the original answer or context directly in your answer.\nWhen "
                 "in doubt, just repeat the original answer.\nNew Context: " + "\n\n".join(docs) + "\nQuery: " + q +
                 "\nOriginal Answer: See the wiki.\nNew Answer: ")


def llamaindex_context_chat(q: str, docs: list[str]) -> Body:
    system = ("Use the context information below to assist the user.\n--------------------\n" + "\n\n".join(docs) +
              "\n--------------------\n")
    return _user(q, system)


def llamaindex_condense_plus_context(q: str, docs: list[str]) -> Body:
    system = ("\n  The following is a friendly conversation between a user and an AI assistant.\n  The assistant is "
              "talkative and provides lots of specific details from its context.\n  If the assistant does not know the "
              "answer to a question, it truthfully says it\n  does not know.\n\n  Here are the relevant documents for the "
              "context:\n\n  " + "\n\n".join(docs) + "\n\n  Instruction: Based on the above documents, provide a detailed "
              "answer for the user question below.\n  Answer \"don't know\" if not present in the document.\n  ")
    return _user(q, system)


def langchain_rlm(q: str, docs: list[str]) -> Body:
    return _user("You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
                 "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
                 "maximum and keep the answer concise.\nQuestion: " + q + " \nContext: " + "\n\n".join(docs) + " \nAnswer:")


def langchain_lcel(q: str, docs: list[str]) -> Body:
    return _user("Answer the question based only on the following context:\n" + "\n\n".join(docs) + "\n\nQuestion: " + q + "\n")


def langchain_system_stuff(q: str, docs: list[str]) -> Body:
    return _user(q, "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
                 "answer the question. If you don't know the answer, say that you don't know. Use three sentences maximum "
                 "and keep the answer concise.\n\n" + "\n\n".join(docs))


def langchain_middleware(q: str, docs: list[str]) -> Body:
    return _user(q, "You are a helpful assistant. Use the following context in your response:\n\n" + "\n\n".join(docs))


def langchain_agent_tool(q: str, docs: list[str]) -> Body:
    serialized = "\n\n".join(f"Source: {{'source': 'wiki/{i}.md'}}\nContent: {d}" for i, d in enumerate(docs))
    return {"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": "You have access to a tool that retrieves context from the wiki. Use the tool to help answer user queries."},
        {"role": "user", "content": q},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "retrieve_context", "arguments": json.dumps({"query": q})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": serialized},
    ]}


def haystack_chat_prompt_builder(q: str, docs: list[str]) -> Body:
    rendered = "".join(f"\n    {d}\n" for d in docs)
    return _user("\nGiven the following information, answer the question.\n\nContext:\n" + rendered + "\nQuestion: " + q + "\nAnswer:\n")


def dspy_chat_adapter(q: str, docs: list[str]) -> Body:
    ctx = "\n".join(f"[{i}] «{d}»" for i, d in enumerate(docs, 1))
    system = ("Your input fields are:\n1. `context` (str)\n2. `question` (str)\nYour output fields are:\n1. `response` (str)\n"
              "All interactions will be structured in the following way, with the appropriate values filled in.\n\n"
              "[[ ## context ## ]]\n{context}\n\n[[ ## question ## ]]\n{question}\n\n[[ ## response ## ]]\n{response}\n\n"
              "[[ ## completed ## ]]\nIn adhering to this structure, your objective is: \n        Given the fields "
              "`context`, `question`, produce the fields `response`.")
    return _user(f"[[ ## context ## ]]\n{ctx}\n\n[[ ## question ## ]]\n{q}\n\nRespond with the corresponding output "
                 "fields, starting with the field `[[ ## response ## ]]`, and then ending with the marker for "
                 "`[[ ## completed ## ]]`.", system)


def openai_agents_function_tool(q: str, docs: list[str]) -> Body:
    return {"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": "You answer questions about the internal wiki."},
        {"role": "user", "content": q},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "type": "function", "function": {
            "name": "search_wiki", "arguments": json.dumps({"query": q})}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": json.dumps([{"text": d, "id": f"doc-{i}"} for i, d in enumerate(docs)])},
    ]}


def custom_numbered_system(q: str, docs: list[str]) -> Body:
    return _user(q, "Answer using only the documents below. Cite them as [n].\n\nDocuments:\n" +
                 "\n".join(f"[{i}] {d}" for i, d in enumerate(docs, 1)))


def custom_search_results_user(q: str, docs: list[str]) -> Body:
    return _user("Here are the search results:\n\n" + "\n\n".join(f"Source: wiki/{i}.md\n{d}" for i, d in enumerate(docs)) +
                 "\n\nQuestion: " + q)


RAG_LAYOUTS: dict[str, Callable[[str, list[str]], Body]] = {f.__name__: f for f in (
    llamaindex_compact, llamaindex_tree_summarize, llamaindex_refine, llamaindex_context_chat,
    llamaindex_condense_plus_context, langchain_rlm, langchain_lcel, langchain_system_stuff, langchain_middleware,
    langchain_agent_tool, haystack_chat_prompt_builder, dspy_chat_adapter, openai_agents_function_tool,
    custom_numbered_system, custom_search_results_user,
)}

# --------------------------------------------------------------------------------------------- non-RAG kinds
PERSONA = ("You are Ada, a friendly senior engineer at a logistics company. You speak plainly, you prefer short "
           "answers, and you never invent facts. When you are unsure, say so.")
LONG_SYSTEM = (
    "You are a customer support assistant for an online bookshop.\n\nFollow these rules when citing sources:\n"
    "1. Always cite the order number when you refer to an order.\n2. Never share another customer's details.\n"
    "3. Keep answers under 120 words unless the customer asks for more.\n4. Use British spelling in every reply.\n\n"
    "Tone: warm, concise, professional. If a request is outside your scope, politely decline and suggest email support."
)
FEW_SHOT = ("Classify the sentiment of the review as positive, negative or neutral.\n\nHere are some examples:\n\n"
            "Review: The delivery was quick and the box was intact.\nSentiment: positive\n\n"
            "Review: The handle broke after two days of normal use.\nSentiment: negative\n\n"
            "Review: It is a kettle. It boils water.\nSentiment: neutral")
CODE = ("Here is my code:\n\n```python\ndef load(path):\n    import json\n    with open(path) as f:\n        return json.load(f)\n"
        "\n\nclass Cache:\n    def __init__(self):\n        self.items = {}\n```\n\nWhy does load() raise a FileNotFoundError "
        "when I run it from another folder?")
ARTICLE = ("Rivers in the northern valley flooded twice this spring after an unusually warm March melted the snowpack early. "
           "Farmers reported that fields near the lower bends stayed under water for nearly three weeks.\n\n"
           "The regional council has proposed widening two channels and restoring a wetland upstream, which engineers "
           "say could absorb a large share of future peak flows.\n\nCritics argue the plan is expensive and slow, and "
           "want temporary barriers installed before next year's melt instead.")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
CHATTY = ["What is the capital of Australia?", "Can you suggest a name for a grey cat?", "how do I reverse a list in python",
          "Write a haiku about autumn rain.", "Why is the sky blue?", "What's a good way to learn Spanish quickly?",
          "Explain recursion to a ten year old.", "Is it safe to eat raw cookie dough?", "hi!", "Thanks, that helped."]


def non_rag_bodies(rng: random.Random) -> list[tuple[str, Body]]:
    out: list[tuple[str, Body]] = []
    for i in range(20):
        q = CHATTY[i % len(CHATTY)]
        out.append(("plain_chat", _user(q)))
        out.append(("persona", _user(q, PERSONA)))
        out.append(("long_system_rules_about_sources", _user(q, LONG_SYSTEM)))
        out.append(("few_shot", _user(f"Review: {rng.choice(['Great value.', 'Arrived late and scratched.', 'Fine.'])}\nSentiment:", FEW_SHOT)))
        out.append(("pasted_code", _user(CODE.replace("load", f"load_{i}"))))
        out.append(("article_summarise", _user(f"Summarise the following article in {2 + i % 3} sentences:\n\n" + ARTICLE)))
        out.append(("article_summarise_after", _user(ARTICLE + "\n\nsummarise this")))
        out.append(("proofread_document", _user("Please proofread the following document:\n\n" + ARTICLE + "\n\nCan you fix the grammar?")))
        out.append(("tool_schema", {**_user(f"What's the weather in {rng.choice(['Oslo', 'Lima', 'Pune'])}?", "You are a helpful assistant."), "tools": TOOLS}))
        out.append(("personal_context", _user("Some context: I run a small bakery with three employees and we open at 6am.\n\n"
                                               "Another detail: two of them are students and can only work weekends.\n\n"
                                               "How should I schedule shifts?")))
        history = [{"role": "user", "content": CHATTY[(i + k) % len(CHATTY)]} if k % 2 == 0 else
                   {"role": "assistant", "content": "Sure. " + ARTICLE.split("\n\n")[k % 3]} for k in range(6)]
        out.append(("multi_turn", {"model": "gpt-4o-mini", "messages": [*history, {"role": "user", "content": "And why is that?"}]}))
        out.append(("translate", _user("Translate the following passages into French:\n\n" + ARTICLE)))
    return out


def corpus(per_layout: int = 16) -> list[tuple[bool, str, Body]]:
    rng = random.Random(17)
    items: list[tuple[bool, str, Body]] = []
    for n, (name, layout) in enumerate(RAG_LAYOUTS.items()):
        for k in range(per_layout):
            docs, questions = topic(n * per_layout + k)
            rng.shuffle(docs)
            items.append((True, name, layout(questions[k % len(questions)], docs)))
    items.extend((False, kind, body) for kind, body in non_rag_bodies(rng))
    return items
