"""A held-out labelled corpus: written (and committed) before any recall change to the generic rule was tried on
the independent corpus, and never used to tune a rule.  It measures a rule change on requests its author did not
look at while making it.  Same labelling as bench/recognition_corpus_independent.py: RAG means "answer from
retrieved documents"; text the user pasted in and asks about is not RAG.  Synthetic text.  Deterministic.
Each item: (label: bool, kind: str, body: dict).
"""

from __future__ import annotations

import json
from typing import Any

Body = dict[str, Any]

DOCSETS: list[tuple[str, list[str]]] = [
    ("Can I bring my dog on the ferry?", [
        "Dogs are welcome on all ferry crossings if they stay on a lead and remain on the outer deck.",
        "Assistance dogs may travel in passenger lounges. Other pets are not allowed indoors at any time.",
        "A pet ticket costs 6 euros one way and can be bought at the terminal or online.",
    ]),
    ("what is the warranty period for the X200 drill", [
        "All X200 cordless drills carry a three-year limited warranty from the date of purchase.",
        "The battery pack is covered for two years; chargers are covered for one year.",
        "Register the product within 30 days to extend the drill warranty by one additional year.",
    ]),
]


def _body(*messages: tuple[str, Any]) -> Body:
    return {"model": "gpt-4o-mini", "messages": [{"role": role, "content": content} for role, content in messages]}


def rag() -> list[tuple[bool, str, Body]]:
    items: list[tuple[str, Body]] = []
    for q, docs in DOCSETS:
        items += [
            ("streamlit_dashes_system", _body(
                ("system", "You are a helpful support bot. Use only the information in the documents below to answer."
                           "\n\n---\n" + "\n---\n".join(docs) + "\n---"), ("user", q))),
            ("relevant_context_bullets_user", _body(
                ("user", "Relevant context:\n" + "\n".join(f"- {d}" for d in docs) + f"\n\nUser question: {q}"))),
            ("use_following_context_answer_language", _body(
                ("user", "Use the following context to answer the question:\n" + "\n\n".join(docs)
                 + f"\n\nQuestion: {q}\n\nAnswer in the same language as the question."))),
            ("reference_material_system", _body(
                ("system", "Reference material:\n\n" + "\n\n".join(docs)), ("user", q))),
            ("workspace_pages_user", _body(
                ("user", "Here is what I found in your workspace:\n\n"
                 + "\n\n".join(f"Page: Travel policy {i}\n{d}" for i, d in enumerate(docs, 1)) + f"\n\nNow answer: {q}"))),
            ("numbered_facts_user", _body(
                ("user", "Facts:\n" + "\n".join(f"{i}. {d}" for i, d in enumerate(docs, 1))
                 + f"\n\nUsing only the facts above, answer: {q}"))),
            ("context_in_earlier_user_turn", _body(
                ("system", "Answer from the context the user gives you."),
                ("user", "Context:\n\n" + "\n\n".join(docs)), ("user", q))),
            ("german_context", _body(
                ("user", "Beantworte die Frage anhand des folgenden Kontexts.\n\nKontext:\n" + "\n\n".join(docs)
                 + f"\n\nFrage: {q}"))),
            ("fenced_excerpts", _body(
                ("user", "Documentation excerpts:\n" + "\n".join(f"```\n{d}\n```" for d in docs) + f"\nQuestion: {q}"))),
            ("knowledge_tags_system", _body(
                ("system", "Answer using the knowledge below.\n<knowledge>\n" + "\n\n".join(docs) + "\n</knowledge>"),
                ("user", q))),
            ("search_tool_list_of_strings", {"model": "gpt-4o-mini", "messages": [
                {"role": "user", "content": q},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "search_docs", "arguments": json.dumps({"q": q})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": json.dumps(docs)}]}),
            ("retrieved_passages_numbered_system", _body(
                ("system", "You answer customer questions. Retrieved passages:\n\n"
                 + "\n\n".join(f"[{i}] {d}" for i, d in enumerate(docs, 1))
                 + "\n\nIf the passages do not answer the question, say you are not sure."), ("user", q))),
        ]
    return [(True, f"holdout_rag:{kind}", body) for kind, body in items]


ESSAY = ("Remote work changed how small teams communicate. Most of our decisions now happen in writing, which "
         "slows some discussions but leaves a record everyone can read later.\n\nThe hardest part has been "
         "onboarding: new colleagues miss the casual questions they would ask at a desk nearby.")


def non_rag() -> list[tuple[bool, str, Body]]:
    items: list[tuple[str, Body]] = [
        ("essay_paragraph_question", _body(("user", "Here is the following text from my essay:\n\n" + ESSAY
                                            + "\n\nDoes the second paragraph flow well from the first?"))),
        ("email_assistant_system", _body(
            ("system", "You draft emails for Dana Whitfield, operations lead.\n\nStyle rules:\n- Short sentences.\n"
                       "- No exclamation marks.\n\nSignature:\nDana Whitfield\nOperations, Northwind Freight"),
            ("user", "Can you write a reply declining the Thursday meeting?"))),
        ("cover_letter_from_job_ad", _body(("user", "Job description:\n\nWe are hiring a backend engineer to build "
                                            "payment APIs in Go. Experience with Postgres and Kafka is a plus.\n\n"
                                            "Fully remote within the EU.\n\nWrite me a cover letter for this role."))),
        ("two_files_failing_test", _body(("user", "```python\n# calc.py\ndef div(a, b):\n    return a // b\n```\n\n"
                                          "```python\n# test_calc.py\ndef test_div():\n    assert div(7, 2) == 3.5\n```"
                                          "\n\nWhy does the test fail?"))),
        ("which_json_is_valid", _body(("user", "Given the following documents:\n\n{\"name\": \"Ana\", \"age\": 31,}\n\n"
                                       "{\"name\": \"Ana\", \"age\": 31}\n\nWhich one is valid JSON?"))),
        ("react_agent_template", _body(("user",
            "Answer the following questions as best you can. You have access to the following tools:\n\n"
            "search: useful for when you need to answer questions about current events\ncalculator: useful for "
            "when you need to do arithmetic\n\nUse the following format:\n\nQuestion: the input question you must "
            "answer\nThought: you should always think about what to do\nAction: the action to take, should be one "
            "of [search, calculator]\nAction Input: the input to the action\nObservation: the result of the action\n"
            "... (this Thought/Action/Action Input/Observation can repeat N times)\nThought: I now know the final "
            "answer\nFinal Answer: the final answer to the original input question\n\nBegin!\n\nQuestion: What is "
            "15% of 80?\nThought:"))),
        ("json_schema_extraction_system", _body(
            ("system", "Extract invoice fields. Return JSON matching this schema:\n{\"type\": \"object\", "
                       "\"properties\": {\"number\": {\"type\": \"string\"}, \"total\": {\"type\": \"number\"}}}"),
            ("user", "Invoice INV-2291, total due 418.20 EUR, payable within 30 days."))),
        ("categories_classification", _body(
            ("system", "Classify the customer's message.\n\nCategories:\n- Billing: questions about invoices, "
                       "refunds and payment methods.\n- Shipping: delivery times, tracking and lost parcels.\n- "
                       "Account: login problems and profile changes."),
            ("user", "Where is my parcel? It was due Monday."))),
        ("follow_these_steps", _body(("user", "Follow these steps:\n1. Read the customer's complaint.\n2. Apologise "
                                      "once.\n3. Offer a concrete next step.\n\nComplaint: my order arrived without the "
                                      "charger. What should I write back?"))),
        ("sql_result_table", _body(("user", "region | orders | revenue\nnorth | 1204 | 88 310\nsouth | 980 | 91 002\n"
                                    "west | 1533 | 79 450\n\nWhat does this tell us about average order value?"))),
        ("edge_cases_for_function", _body(("user", "Given the following function:\n\n```js\nfunction slugify(s) {\n"
                                           "  return s.toLowerCase().replace(/\\s+/g, '-');\n}\n```\n\nWhat edge "
                                           "cases should I test?"))),
        ("translate_ui_strings", _body(("user", "Translate these UI strings into Italian:\n\nSave changes\n\nDiscard "
                                        "draft\n\nYour session has expired, please sign in again."))),
        ("multi_turn_which_cheapest", _body(
            ("user", "Suggest three ways to get from Milan to Zurich."),
            ("assistant", "1. Direct EuroCity train, about 3 h 20 min.\n2. FlixBus, about 4 h 30 min.\n3. A short "
                          "flight, about 1 h in the air plus airport time."),
            ("user", "Which of these is usually the cheapest?"))),
        ("rubric_grading", _body(("user", "Rubric:\n- Clarity (0-5): is the argument easy to follow?\n- Evidence "
                                  "(0-5): are claims supported with examples?\n\nEssay:\n" + ESSAY
                                  + "\n\nWhat score would you give on each criterion?"))),
        ("changelog_breaking_changes", _body(("user", "Changelog 4.0.0:\n\n- Removed the deprecated `connect_sync` "
                                              "helper.\n\n- Timeouts are now given in seconds instead of "
                                              "milliseconds.\n\n- Added retry support for idempotent requests.\n\n"
                                              "What breaking changes are there?"))),
        ("character_sheet_roleplay", _body(
            ("system", "Character sheet:\nName: Brother Aldous\nBackground: a retired monk who now brews cider in "
                       "the valley.\nManner: slow, kind, fond of proverbs.\n\nStay in character."),
            ("user", "What brought you to the valley?"))),
        ("options_decision", _body(("user", "Here are the following options for our database:\n\nOption A: "
                                    "managed Postgres, higher monthly cost, no ops work.\n\nOption B: self-hosted "
                                    "Postgres on our VMs, cheaper, we handle backups.\n\nWhich is better for a team "
                                    "of three developers?"))),
        ("my_notes_what_forgot", _body(("user", "My notes for the trip:\n\nPassport, charger, two adapters.\n\n"
                                        "Booked the hotel near the station for three nights.\n\nWhat did I forget?"))),
        ("short_chat_emoji", _body(("user", "lol that's great 😄 what else can you do?"))),
        ("developer_tone_examples", _body(
            ("developer", "You write release announcements.\n\nExamples:\n\nInput: faster search\nOutput: Search "
                          "is now up to twice as fast.\n\nInput: dark mode\nOutput: Dark mode has arrived."),
            ("user", "Input: offline sync"))),
        ("meeting_transcript_question", _body(("user", "Transcript:\n\nAlex: I think we should ship on Friday.\n\n"
                                               "Sam: I'd rather wait for the load test results next week.\n\nPriya: "
                                               "Friday works if the test passes by Wednesday.\n\nWho disagreed with "
                                               "the plan?"))),
        ("summarise_conversation", _body(
            ("user", "We talked about the budget earlier."),
            ("assistant", "Yes, you wanted to cut travel by 20% and keep the training budget."),
            ("user", "Summarise our conversation so far in two bullet points."))),
        ("vendor_quotes_compare", _body(("user", "Quote from Vendor 1: 12 laptops at 1,050 EUR each, delivery in two "
                                         "weeks.\n\nQuote from Vendor 2: 12 laptops at 990 EUR each, delivery in six "
                                         "weeks, plus 150 EUR shipping.\n\nWhich quote is cheaper overall?"))),
        ("weather_tool_result", {"model": "gpt-4o-mini", "tools": [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
            "messages": [
                {"role": "user", "content": "Do I need an umbrella in Bergen today?"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "w1", "type": "function", "function": {
                    "name": "get_weather", "arguments": json.dumps({"city": "Bergen"})}}]},
                {"role": "tool", "tool_call_id": "w1", "content": json.dumps({"temp_c": 9, "rain_mm": 4.2})}]}),
        ("search_none_found", _body(("system", "Search results:\n(none)\n\nIf nothing was found, say so."),
                                    ("user", "What is the office wifi password?"))),
        ("long_product_system_prompt", _body(
            ("system", "You are the in-app assistant of Ledgerly, a bookkeeping app for freelancers.\n\n## What "
                       "you can help with\nCreating invoices, tracking expenses, and explaining reports.\n\n## What "
                       "you cannot do\nGive tax advice or change a user's data.\n\n## Style\nFriendly, concise, "
                       "plain language. Use the user's currency."),
            ("user", "How do I add a logo to my invoices?"))),
        ("code_explain_long", _body(("user", "Explain what this does:\n\nimport itertools\n\ndef windows(xs, n):\n"
                                     "    it = iter(xs)\n    win = list(itertools.islice(it, n))\n    if len(win) == "
                                     "n:\n        yield tuple(win)\n    for x in it:\n        win = win[1:] + [x]\n"
                                     "        yield tuple(win)"))),
        ("cooking_substitution", _body(("user", "Ingredients: 250 g butter, 200 g sugar, 3 eggs, 250 g flour.\n\n"
                                        "Can I use oil instead of butter in this cake?"))),
    ]
    return [(False, f"holdout_non_rag:{kind}", body) for kind, body in items]


def corpus() -> list[tuple[bool, str, Body]]:
    return [*rag(), *non_rag()]
