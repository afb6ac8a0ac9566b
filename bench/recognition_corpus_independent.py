"""A second labelled corpus, written independently of the generic rule (its conditions were not consulted while
writing it, and nothing here was edited to make a request pass or fail):

- `captured`: the request bodies the real frameworks sent in tests/test_frameworks.py (tests/fixtures/frameworks/),
  each labelled by what the request is for: the call that answers from retrieved material is RAG; an agent's
  tool-choosing turn, a relevance grader and a question rewriter are not;
- `written_rag`: RAG prompts in layouts the built-in rules were not built from (cookbook and vector-database
  tutorials, older LangChain and Haystack templates, LlamaIndex citation engine, Cohere/Anthropic document
  blocks, search-assistant prompts, other languages, content-part lists), over two synthetic document sets;
- `written_non_rag`: realistic requests that are not RAG, many with the shapes a RAG rule could confuse (long
  system prompts with headed sections, code review, pasted articles with a task or a question about them,
  text-to-SQL with a schema, LLM-as-judge prompts with a `Context:` block, pasted documents to compare, personal
  context, few-shot examples, tool schemas and non-retrieval tool results).

The labels answer "should ragtap treat this request as a RAG answer over retrieved documents?".  Text pasted by
the user and asked about (an article, a CV, a CSV) is labelled non-RAG: nothing was retrieved.  All text is
synthetic.  Deterministic.  Each item: (label: bool, kind: str, body: dict).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Body = dict[str, Any]
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "frameworks"

# ------------------------------------------------------------------------------------------------ captured
# fixture -> label of each request it holds, in order (what the request is for, not what a rule says).
CAPTURED_LABELS: dict[str, list[bool]] = {
    "langchain_lcel_system": [True],
    "langchain_lcel_human": [True],
    "langchain_agent_middleware": [True],
    "langchain_agent_tool": [False, True],  # tool-choosing turn, then the answer over the tool's results
    "llamaindex_query_compact": [True],
    "llamaindex_query_simple_summarize": [True],
    "llamaindex_query_tree_summarize": [True],
    "llamaindex_query_refine": [True, True],
    "llamaindex_chat_context": [True],
    "llamaindex_chat_condense_plus_context": [True],
    "llamaindex_chat_condense_question": [True],
    "llamaindex_chat_best": [True],
    "llamaindex_query_citation": [True],
    "dspy_chain_of_thought": [True],
    "haystack_chat_prompt_builder": [True],
    "openai_agents_default_api": [False, True],
    "openai_agents_chat_model": [False, True],
    # tool turn, relevance grader, question rewriter, tool turn on the rewritten question, grader, generation
    "langgraph_agentic_rag": [False, False, False, False, False, True],
}


def captured() -> list[tuple[bool, str, Body]]:
    items: list[tuple[bool, str, Body]] = []
    for name, labels in CAPTURED_LABELS.items():
        path = FIXTURES / f"{name}.json"
        if not path.exists():
            continue
        requests = json.loads(path.read_text())["requests"]
        assert len(requests) == len(labels), name
        items.extend((label, f"captured:{name}", {"model": "m", **body}) for label, body in zip(labels, requests, strict=True))
    return items


# ------------------------------------------------------------------------------------------- written RAG
DOCSETS: list[tuple[str, list[tuple[str, str]]]] = [
    ("How many days of parental leave do employees get?", [
        ("handbook/leave.md", "Employees with at least six months of service receive 16 weeks of paid parental leave, "
                              "which can be taken in up to three blocks within the child's first year."),
        ("handbook/leave-faq.md", "Parental leave is paid at full salary. Requests go to People Ops at least eight "
                                  "weeks before the first block starts."),
        ("handbook/benefits.md", "Part-time employees receive parental leave pro rata to their contracted hours."),
    ]),
    ("why does my espresso machine show a blinking red light", [
        ("manual/p12.txt", "A blinking red indicator means the descaling cycle is overdue. Run the descaling program "
                           "with the supplied solution before brewing again."),
        ("manual/p13.txt", "The descaling program takes about 25 minutes and is started by holding the steam and "
                           "hot-water buttons together for five seconds."),
        ("support/kb-211.html", "If the red light keeps blinking after descaling, reset the counter by switching the "
                                "machine off, then on while holding the brew button."),
    ]),
]


def _u(text: Any, system: str | None = None, role: str = "system") -> Body:
    messages = [{"role": role, "content": system}] if system else []
    return {"model": "gpt-4o-mini", "messages": [*messages, {"role": "user", "content": text}]}


def _texts(docs: list[tuple[str, str]]) -> list[str]:
    return [t for _s, t in docs]


def written_rag() -> list[tuple[bool, str, Body]]:
    items: list[tuple[str, Body]] = []
    for q, docs in DOCSETS:
        texts = _texts(docs)
        # OpenAI cookbook, "Question answering using embeddings-based search"
        items.append(("openai_cookbook_articles", _u(
            "Use the below articles on our internal documentation to answer the subsequent question. If the answer "
            "cannot be found in the articles, write \"I could not find an answer.\""
            + "".join(f'\n\nWikipedia article section:\n"""\n{t}\n"""' for t in texts) + f"\n\nQuestion: {q}",
            "You answer questions about our internal documentation.")))
        # Pinecone's RAG examples
        items.append(("pinecone_context_below", _u(
            "Answer the question based on the context below. If the question cannot be answered using the "
            "information provided answer with \"I don't know\".\n\nContext:\n" + "\n\n---\n\n".join(texts)
            + f"\n\nQuestion: {q}\nAnswer:")))
        # LangChain's pre-1.0 "stuff" QA prompt
        items.append(("langchain_legacy_stuff_qa", _u(
            "Use the following pieces of context to answer the question at the end. If you don't know the answer, "
            "just say that you don't know, don't try to make up an answer.\n\n" + "\n\n".join(texts)
            + f"\n\nQuestion: {q}\nHelpful Answer:")))
        # LangChain's pre-1.0 chat QA system prompt (ConversationalRetrievalChain)
        items.append(("langchain_legacy_chat_system", _u(q,
            "Use the following pieces of context to answer the user's question. \nIf you don't know the answer, "
            "just say that you don't know, don't try to make up an answer.\n----------------\n" + "\n\n".join(texts))))
        # Anthropic's long-context document blocks
        items.append(("anthropic_documents_xml", _u(
            "<documents>\n" + "".join(f'<document index="{i}">\n<source>{s}</source>\n<document_content>\n{t}\n'
                                      f"</document_content>\n</document>\n" for i, (s, t) in enumerate(docs, 1))
            + f"</documents>\n\n{q}")))
        # Markdown-sectioned system prompt with a knowledge section
        items.append(("markdown_knowledge_system", _u(q,
            "# Role\nYou are the help-centre assistant.\n\n# Knowledge\n"
            + "\n\n".join(f"## {s}\n{t}" for s, t in docs)
            + "\n\n# Rules\n- Answer only from the knowledge above.\n- If it is not covered, say so.")))
        # Vercel AI SDK RAG guide: a knowledge-base tool whose results come back as JSON
        items.append(("vercel_ai_tool_json", {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": "You are a helpful assistant. Check your knowledge base before answering any "
                                          "questions. Only respond to questions using information from tool calls."},
            {"role": "user", "content": q},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_kb", "type": "function", "function": {
                "name": "getInformation", "arguments": json.dumps({"question": q})}}]},
            {"role": "tool", "tool_call_id": "call_kb", "content": json.dumps(
                [{"content": t, "similarity": round(0.9 - 0.05 * i, 2)} for i, t in enumerate(texts)])},
        ]}))
        # Azure "on your data"-style retrieved documents with [docN] ids
        items.append(("azure_doc_ids_system", _u(q,
            "You are an AI assistant that helps people find information.\n\nRetrieved documents:\n"
            + "\n".join(f"[doc{i}]: {t}" for i, t in enumerate(texts, 1))
            + "\n\nCite the documents you use as [docN].")))
        # LlamaIndex CitationQueryEngine
        items.append(("llamaindex_citation", _u(
            "Please provide an answer based solely on the provided sources. When referencing information from a "
            "source, cite the appropriate source(s) using their corresponding numbers. Every answer should include "
            "at least one source citation. Only cite a source when you are explicitly referencing it. If none of the "
            "sources are helpful, you should indicate that. For example:\nSource 1:\nThe sky is red in the evening "
            "and blue in the morning.\nSource 2:\nWater is wet when the sky is red.\nQuery: When is water wet?\n"
            "Answer: Water will be wet when the sky is red [2], which occurs in the evening [1].\nNow it's your "
            "turn. Below are several numbered sources of information:\n------\n"
            + "\n\n".join(f"Source {i}:\n{t}" for i, t in enumerate(texts, 1)) + f"\n------\nQuery: {q}\nAnswer: ")))
        # Haystack 1.x "deepset/question-answering"
        items.append(("haystack1_question_answering", _u(
            "Given the context please answer the question. Context: " + " ".join(texts) + f"; Question: {q}; Answer:")))
        # txtai-style lower-case labels, question first
        items.append(("lowercase_labels_question_first", _u(
            "Answer the following question using only the context below. Only include information specifically "
            f"discussed.\n\nquestion: {q}\ncontext: " + "\n".join(texts))))
        # Perplexity-like search assistant
        items.append(("search_results_numbered_system", _u(q,
            "You are a search assistant. Cite sources inline as [1], [2].\n\nSearch results:\n"
            + "\n".join(f"[{i}] {s}\n{t}" for i, (s, t) in enumerate(docs, 1)))))
        # Handbook excerpts with section/page headers, labelled employee question
        items.append(("excerpts_with_page_refs", _u(
            "Relevant excerpts from the company documentation:\n\n"
            + "\n\n".join(f"({s}, page {12 + 7 * i}) {t}" for i, (s, t) in enumerate(docs))
            + f"\n\nEmployee question: {q}")))
        # developer role (o-series) with "Passage N:" items
        items.append(("developer_passages", _u(q,
            "Answer with the retrieved passages below. Quote the passage number you rely on.\n\n"
            + "\n".join(f"Passage {i}: {t}" for i, t in enumerate(texts, 1)), role="developer")))
        # content-part list: one text part with the context, one with the question
        items.append(("content_parts_context_then_question", _u([
            {"type": "text", "text": "Context documents:\n\n" + "\n\n".join(texts)},
            {"type": "text", "text": f"Question: {q}"},
        ])))
        # Tavily-like web search tool result in plain text
        items.append(("web_search_tool_text", {"model": "gpt-4o-mini", "messages": [
            {"role": "user", "content": q},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_ws", "type": "function", "function": {
                "name": "web_search", "arguments": json.dumps({"query": q})}}]},
            {"role": "tool", "tool_call_id": "call_ws", "content": "\n\n".join(
                f"Title: {s}\nURL: https://example.com/{s}\nContent: {t}" for s, t in docs)},
        ]}))
        # Cohere-style document blocks in the system prompt
        items.append(("cohere_documents_system", _u(q,
            "## Task and Context\nYou help people answer their questions using the documents provided.\n\n"
            "## Documents\n" + "\n\n".join(f"Document: {i}\ntitle: {s}\ntext: {t}" for i, (s, t) in enumerate(docs)))))
        # Spanish
        items.append(("spanish_context_question", _u(
            "Usa el siguiente contexto para responder la pregunta. Si no sabes la respuesta, dilo.\n\nContexto:\n"
            + "\n\n".join(texts) + f"\n\nPregunta: {q}\nRespuesta:")))
        # question first, then "these help-centre articles"
        items.append(("question_then_articles", _u(
            f"{q}\n\nAnswer using only these help-centre articles:\n\n" + "\n\n".join(texts))))
        # Haystack 2 PromptBuilder docs example
        items.append(("haystack2_prompt_builder_docs", _u(
            "Given these documents, answer the question.\nDocuments:\n" + "".join(f"\n    {t}\n" for t in texts)
            + f"\n\nQuestion: {q}\nAnswer:")))
        # bullet knowledge base in the system prompt
        items.append(("bullet_knowledge_base_system", _u(q,
            "Knowledge base:\n" + "\n".join(f"* {t}" for t in texts)
            + "\n\nOnly use the knowledge base. If the answer is not there, say you don't know.")))
        # multi-turn RAG chat: history, then context re-retrieved for the last question
        items.append(("multi_turn_context_system", {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": "You are a helpful assistant. Use the following retrieved context to answer."
                                          "\n\nContext:\n" + "\n\n".join(texts)},
            {"role": "user", "content": "hi, quick question"},
            {"role": "assistant", "content": "Of course, what would you like to know?"},
            {"role": "user", "content": q},
        ]}))
        # JSON search results in a fenced block
        items.append(("fenced_json_results", _u(
            "Answer the question using the JSON search results.\n\nSearch results:\n```json\n"
            + json.dumps([{"source": s, "text": t} for s, t in docs], indent=2) + f"\n```\n\nQuestion: {q}")))
        # single-newline separated context in the system prompt
        items.append(("context_information_single_newlines", _u(q,
            "Context information:\n" + "\n".join(texts) + "\nAnswer the user from the context information only.")))
        # semantic search results as a numbered list in the user message, question last
        items.append(("numbered_results_user", _u(
            "Top results from the knowledge base:\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(texts, 1))
            + f"\n\nUsing the results above, {q[0].lower() + q[1:]}")))
        # source-tagged chunks in square brackets (common in hand-rolled FastAPI RAG services)
        items.append(("bracket_source_chunks", _u(
            "\n\n".join(f"[Source: {s}]\n{t}" for s, t in docs) + f"\n\nBased on the sources above: {q}",
            "Answer strictly from the provided sources and cite them.")))
    return [(True, f"written_rag:{kind}", body) for kind, body in items]


# --------------------------------------------------------------------------------------------- non-RAG
ARTICLE = ("City councils across the region are experimenting with four-day school weeks to cope with teacher "
           "shortages. Early reports from two districts suggest attendance improved slightly, although parents "
           "of younger children say childcare on the fifth day has become a new cost.\n\n"
           "Researchers caution that the evidence is thin: most pilots started less than two years ago, and test "
           "scores have not yet been published. Teachers' unions broadly support the change, citing reduced "
           "burnout.\n\nA state education board will decide next spring whether to fund an expanded pilot.")
DIFF = ("```diff\n--- a/billing/invoice.py\n+++ b/billing/invoice.py\n@@ -41,7 +41,9 @@ def total(lines):\n"
        "-    return sum(l.amount for l in lines)\n+    subtotal = sum(l.amount for l in lines)\n"
        "+    tax = subtotal * TAX_RATE\n+    return round(subtotal + tax)\n```")
LONG_CODING_SYSTEM = (
    "You are a senior software engineer helping developers on the Platform team.\n\n## Guidelines\n"
    "- Prefer the standard library over new dependencies.\n- Explain trade-offs briefly before giving code.\n"
    "- Use type hints in Python and strict mode in TypeScript.\n- Never suggest disabling tests or linters.\n\n"
    "## Output format\nStart with a one-sentence summary, then the code, then a short list of caveats.\n\n"
    "## Context about our stack\nWe run Python 3.11 services on Kubernetes, Postgres 15 for storage and Redis for "
    "queues. Deployments go through Argo CD.\n\n## Tone\nDirect and friendly. No filler.")
TOOLS = [
    {"type": "function", "function": {"name": "create_event", "description": "Create a calendar event.",
     "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "start": {"type": "string",
      "description": "ISO 8601 start time"}, "minutes": {"type": "integer"}}, "required": ["title", "start"]}}},
    {"type": "function", "function": {"name": "list_events", "description": "List the user's events for a day.",
     "parameters": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}},
]


def _tool_turn(question: str, name: str, arguments: dict[str, Any], result: str, tools: bool = True) -> Body:
    body: Body = {"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": "You are a scheduling assistant."},
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_t", "type": "function", "function": {
            "name": name, "arguments": json.dumps(arguments)}}]},
        {"role": "tool", "tool_call_id": "call_t", "content": result},
    ]}
    if tools:
        body["tools"] = TOOLS
    return body


def written_non_rag() -> list[tuple[bool, str, Body]]:
    items: list[tuple[str, Body]] = [
        ("long_coding_system", _u("How should I retry a failed Redis write without blocking the request?", LONG_CODING_SYSTEM)),
        ("long_coding_system_followup", {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": LONG_CODING_SYSTEM},
            {"role": "user", "content": "What's the cleanest way to run a DB migration before the app starts?"},
            {"role": "assistant", "content": "Run it as a Kubernetes Job or an init container, not from the app."},
            {"role": "user", "content": "Which of those two would you pick for Argo CD?"}]}),
        ("code_review_diff", _u(f"Please review this change:\n\n{DIFF}\n\nAny bugs?")),
        ("code_review_diff_system", _u(DIFF, "You are a meticulous code reviewer. Point out bugs, then style issues.")),
        ("code_go_no_fence", _u("func Sum(xs []int) int {\n\ttotal := 0\n\tfor i := 0; i <= len(xs); i++ {\n"
                                "\t\ttotal += xs[i]\n\t}\n\treturn total\n}\n\nWhat's wrong with this?")),
        ("stack_trace", _u("Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\n    main()\n"
                           "  File \"app.py\", line 8, in main\n    cfg = json.load(open(path))\nFileNotFoundError: "
                           "[Errno 2] No such file or directory: 'config.json'\n\nWhy does this crash only in Docker?")),
        ("docstrings_for_code", _u("Write docstrings for these functions:\n\n```python\ndef parse(s):\n    return "
                                   "[int(x) for x in s.split(',')]\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n```")),
        ("tldr_article", _u("TL;DR:\n\n" + ARTICLE)),
        ("key_points_article", _u("Give me the three key points of the text below.\n\n" + ARTICLE)),
        ("article_main_argument_question", _u(ARTICLE + "\n\nWhat is the main argument of this article?")),
        ("article_question_before", _u("Is the author for or against the four-day week? Here's the piece:\n\n" + ARTICLE)),
        ("translate_article", _u("Translate into German, keep the paragraphs:\n\n" + ARTICLE)),
        ("persona_pirate", _u("What should I pack for a weekend hike?", "You are Captain Salt, a cheerful pirate. "
                              "Always answer in pirate speak, stay family friendly, and end with a sea shanty line.")),
        ("persona_coach", _u("I keep skipping my morning runs. Any advice?", "You are a supportive running coach "
                             "named Priya. You have coached beginners for ten years. Ask one follow-up question at "
                             "the end of every answer. Keep answers under 100 words.")),
        ("persona_game_master", _u("I open the creaky door.", "You are the game master of a fantasy adventure. "
                                   "Describe scenes vividly in the second person, track the player's inventory, and "
                                   "never decide the player's actions for them.")),
        ("few_shot_ner", _u("Text: Maria flew from Lisbon to Oslo on Tuesday.\nEntities:",
                            "Extract people and places.\n\nExamples:\n\nText: Tom met Ana in Paris.\nEntities: "
                            "PERSON=Tom; PERSON=Ana; PLACE=Paris\n\nText: The train left Vienna late.\nEntities: "
                            "PLACE=Vienna")),
        ("few_shot_tone_rewrite", _u("Rewrite: 'Send me the report now.'", "Rewrite messages to sound polite.\n\n"
                                     "Input: 'Fix this.'\nOutput: 'Could you take a look at this when you have a "
                                     "moment?'\n\nInput: 'Where is my refund?'\nOutput: 'Could you let me know "
                                     "the status of my refund?'")),
        ("few_shot_qa_pairs", _u("Q: What is the boiling point of water at sea level?\nA:",
                                 "Answer trivia questions in one short sentence.\n\nQ: What is the capital of Canada?"
                                 "\nA: Ottawa is the capital of Canada.\n\nQ: Who wrote Hamlet?\nA: William "
                                 "Shakespeare wrote Hamlet.")),
        ("text_to_sql_schema", _u("Question: how many users signed up last week?",
                                  "Write a PostgreSQL query for the question.\n\nSchema:\nCREATE TABLE users (id "
                                  "bigint primary key, email text not null, created_at timestamptz not null);\n\n"
                                  "CREATE TABLE orders (id bigint primary key, user_id bigint references users(id), "
                                  "total_cents integer, placed_at timestamptz);")),
        ("text_to_sql_user", _u("Given the following tables:\n\norders(id, customer_id, total, placed_at)\n\n"
                                "customers(id, name, country)\n\nWhich query returns the top 5 countries by revenue?")),
        ("extract_json_from_email", _u("Extract the sender, the date and the requested action from the email below "
                                       "as JSON.\n\nEmail:\nFrom: Jonas Berg\nDate: 3 March\n\nHi team, could you "
                                       "send the signed contract back by Friday? Thanks, Jonas")),
        ("meeting_action_items", _u("Here are my notes from today's meeting:\n\n- Lena will update the pricing page "
                                    "by Thursday.\n\n- Marco is waiting on legal for the new terms.\n\n- We agreed "
                                    "to move the launch to the 14th.\n\nWhat are the action items and who owns them?")),
        ("cv_feedback", _u("Here is my CV:\n\nExperience: Data analyst at a retail chain, 2019-2024. Built weekly "
                           "sales dashboards in Power BI.\n\nEducation: BSc Economics, 2019.\n\nSkills: SQL, Excel, "
                           "some Python.\n\nHow can I make it stronger for a data engineering role?")),
        ("contract_clause", _u("What does this clause mean in plain English?\n\n\"The Licensee shall indemnify and "
                               "hold harmless the Licensor from any claims arising out of the Licensee's use of the "
                               "Software, save where such claims result from the Licensor's gross negligence.\"")),
        ("email_with_personal_context", _u("Context: I'm a primary school teacher and we have a museum trip on the "
                                           "12th.\n\nI need permission slips back by Monday.\n\nCan you write a "
                                           "short email to parents?")),
        ("math_word_problem", _u("Given the following information:\n\n- A train leaves at 09:10 and travels at 80 "
                                 "km/h.\n\n- A second train leaves the same station at 09:40 at 100 km/h.\n\nWhen "
                                 "does the second train catch up?")),
        ("csv_question", _u("month,revenue\nJan,12000\nFeb,9800\nMar,15100\nApr,14900\n\nWhich month had the "
                            "highest revenue, and by how much did it beat the next one?")),
        ("grade_student_answer", _u("Reference answer: Photosynthesis turns light, water and CO2 into glucose and "
                                    "oxygen.\n\nStudent answer: Plants eat sunlight to make oxygen.\n\nIs the student "
                                    "answer correct? Reply with a score from 0 to 5 and one sentence of feedback.")),
        ("llm_judge_faithfulness", _u("You will judge whether an answer is faithful to its context.\n\nContext:\n"
                                      "The museum opens at 10:00 on weekdays.\n\nIt is closed on Mondays.\n\nAnswer:"
                                      "\nThe museum opens at 9:00 every day.\n\nIs every claim in the answer supported "
                                      "by the context? Reply yes or no, then explain.")),
        ("compare_pasted_documents", _u("Compare these two plans and tell me which one is cheaper for a family of "
                                        "four:\n\nDocument 1: The Basic plan costs 12 euros per person per month "
                                        "with no family discount.\n\nDocument 2: The Family plan costs 39 euros per "
                                        "month for up to five people.\n\nWhich one should I choose?")),
        ("story_outline", _u("Here is my story outline:\n\n1. A lighthouse keeper finds a message in a bottle.\n\n"
                             "2. The message is dated fifty years in the future.\n\n3. She decides to answer it.\n\n"
                             "Write the first chapter in about 500 words.")),
        ("brand_voice_examples", _u("Write a tweet announcing our spring sale.", "You write social posts for a small "
                                    "outdoor-gear shop.\n\nBelow are examples of our brand voice:\n\n\"Mud is just "
                                    "trail confetti.\"\n\n\"Our socks have seen things. Good things.\"\n\nKeep "
                                    "posts under 200 characters and use at most one emoji.")),
        ("offsite_constraints", _u("Here are the following constraints for our team offsite:\n\n- 25 people, two "
                                   "of them use wheelchairs.\n\n- Budget of 6,000 euros for two days.\n\n- Reachable "
                                   "by train from Utrecht.\n\nWhat kind of venue would you suggest?")),
        ("tool_schema_first_turn", {**_u("Put a 30 minute call with Sam on Friday at 3pm.", "You are a scheduling "
                                         "assistant."), "tools": TOOLS}),
        ("tool_result_calendar_json", _tool_turn("What's on my calendar tomorrow?", "list_events", {"day": "tomorrow"},
                                                 json.dumps([{"title": "Standup", "start": "09:30", "minutes": 15},
                                                             {"title": "Dentist", "start": "16:00", "minutes": 45}]))),
        ("tool_result_created_status", _tool_turn("Book lunch with Ana at noon.", "create_event",
                                                  {"title": "Lunch with Ana", "start": "12:00"},
                                                  json.dumps({"status": "created", "event_id": 8812}))),
        ("tool_result_number", _tool_turn("How many meetings do I have this week?", "list_events", {"day": "week"}, "7")),
        ("multi_turn_small_talk", {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": "You are a friendly assistant."},
            {"role": "user", "content": "I just adopted a cat!"},
            {"role": "assistant", "content": "Congratulations! What's the cat's name, and how old is she or he?"},
            {"role": "user", "content": "Her name is Miso, she's two. What should I buy first?"}]}),
        ("recipe_adapt", _u("Ingredients:\n\n200 g flour\n\n2 eggs\n\n300 ml milk\n\nHow do I make these pancakes "
                            "without eggs?")),
        ("json_mode_classification", {**_u("Classify: 'My parcel arrived broken.'", "Classify support messages into "
                                           "one of: billing, delivery, product, other. Reply as JSON {\"label\": ...}."),
                                      "response_format": {"type": "json_object"}}),
        ("system_prompt_safety_policy", _u("Can you tell me how to pick a lock?", "You are a helpful assistant.\n\n"
                                           "Policy:\n\n1. Refuse instructions that facilitate breaking into property "
                                           "you do not own.\n\n2. Offer safe alternatives such as calling a licensed "
                                           "locksmith.\n\n3. Be brief and non-judgemental.")),
        ("proofread_paragraph", _u("Proofread please: 'Their going to announce the results tomorow, weather or not "
                                   "the board agree's.'")),
        ("explain_regex", _u("What does this regex match? ^(?:\\d{3}-){2}\\d{4}$")),
        ("interview_prep", _u("I have a product manager interview on Thursday. What questions should I expect?",
                              "You are a career coach. Be practical and specific.")),
        ("release_notes_from_commits", _u("Turn these commits into user-facing release notes:\n\n- fix: invoice "
                                          "rounding for zero-tax countries\n\n- feat: export reports as CSV\n\n- chore: "
                                          "bump dependencies")),
        ("docs_search_no_results", _u("How do I rotate the API key?", "You are the docs assistant. Search results "
                                      "for the user's question:\n\n(no results)\n\nIf there are no results, ask the "
                                      "user to rephrase.")),
    ]
    return [(False, f"written_non_rag:{kind}", body) for kind, body in items]


def corpus() -> list[tuple[bool, str, Body]]:
    return [*captured(), *written_rag(), *written_non_rag()]
