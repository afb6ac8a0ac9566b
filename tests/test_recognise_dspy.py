"""DSPy's ChatAdapter layout (`[[ ## field ## ]]` sections), written as DSPy 2.6's adapter formats a
`ChainOfThought("context, question -> response")` call.  Not captured from an installed DSPy (see the README's
framework table): synthetic documents, the adapter's layout."""

from __future__ import annotations

import pytest

from ragtap.recognise import recognise

from conftest import ANSWER, fixed, json_content

QUESTION = "Which port does the billing service listen on?"
DOCS = ["The billing service listens on port 8443.", "Invoices are generated nightly at 02:00.\nThey are mailed at 06:00."]
SYSTEM = (
    "Your input fields are:\n1. `context` (str)\n2. `question` (str)\nYour output fields are:\n1. `reasoning` (str)\n"
    "2. `response` (str)\nAll interactions will be structured in the following way, with the appropriate values "
    "filled in.\n\n[[ ## context ## ]]\n{context}\n\n[[ ## question ## ]]\n{question}\n\n[[ ## reasoning ## ]]\n"
    "{reasoning}\n\n[[ ## response ## ]]\n{response}\n\n[[ ## completed ## ]]\nIn adhering to this structure, your "
    "objective is: \n        Given the fields `context`, `question`, produce the fields `response`."
)


def dspy_user(question: str = QUESTION, docs: list[str] = DOCS) -> str:
    def blob(text: str) -> str:
        if "\n" not in text:
            return f"«{text}»"
        return "«««\n    " + text.replace("\n", "\n    ") + "\n»»»"

    context = "\n".join(f"[{i}] {blob(d)}" for i, d in enumerate(docs, 1))
    return (
        f"[[ ## context ## ]]\n{context}\n\n[[ ## question ## ]]\n{question}\n\n"
        "Respond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`, then "
        "`[[ ## response ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
    )


def dspy_body() -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": dspy_user()}]}


def test_dspy_chat_adapter_is_recognised() -> None:
    found = recognise(dspy_body())
    assert found.reason == "dspy" and found.inject
    assert found.context is not None and found.context.question == QUESTION
    assert [d.text for d in found.context.documents] == DOCS


def test_dspy_without_a_context_field_is_not_rag() -> None:
    user = "[[ ## question ## ]]\nWhat is 2+2?\n\n[[ ## hint ## ]]\nadd\n\nRespond with the corresponding output fields"
    assert recognise({"messages": [{"role": "user", "content": user}]}).reason == "no_context"


@pytest.mark.parametrize("stream", [False, True])
async def test_dspy_through_the_proxy(start_proxy, stream: bool) -> None:
    proxy = await start_proxy(fixed(json_content()))
    body = dspy_body()
    if stream:
        chunks = await proxy.client.chat.completions.create(model="m", messages=body["messages"], stream=True)
        answer = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    else:
        reply = await proxy.client.chat.completions.create(model="m", messages=body["messages"])
        answer = reply.choices[0].message.content
    assert answer == ANSWER
    record = await proxy.collector.exchange(1)
    assert record.recognition == "dspy" and record.injected
