"""The request bodies the benchmark sends, built once and reused byte for byte.

- RAG: LangChain hub `rlm/rag-prompt` (question before context, `\\nAnswer:` cue) in one user message, as
  langchain-openai sends it; 3 retrieved documents joined by a blank line; ~1.5 KB in total.  ragtap
  recognises it (rule "langchain") and injects its instruction.
- CHAT: a plain chat of the same size (system + user turns, no template), which ragtap forwards untouched.
"""

from __future__ import annotations

import orjson

MODEL = "gpt-4o-mini"

RAG_PREAMBLE = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
    "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
    "maximum and keep the answer concise."
)
QUESTION = "How long do customers have to request a refund for an order that arrived damaged?"
# The load generator numbers its requests: "{n}" becomes 1, 2, 3... so every question is a new text to embed.
NUMBERED_QUESTION = "How long do customers have to request a refund for order {n} if it arrived damaged?"
DOCUMENTS = (
    (
        "Refund policy. Customers may request a refund within 30 days of delivery for any order that arrived "
        "damaged or defective. The request is made from the order page by choosing Report a problem and attaching "
        "a photo of the damage. Refunds go back to the original payment method within 5 to 7 business days after "
        "the claim is approved by the support team."
    ),
    (
        "Shipping and delivery. Standard delivery takes 3 to 5 business days and express delivery takes 1 to 2 "
        "business days. Orders placed before 2 pm are dispatched the same day. Tracking numbers are e-mailed when "
        "the parcel leaves the warehouse, and the carrier's tracking page shows the expected delivery date."
    ),
    (
        "Warranty. Electronic products carry a 2-year manufacturer warranty that covers defects in materials and "
        "workmanship. Accidental damage, water damage and normal wear are not covered. Warranty claims need the "
        "order number and the product's serial number and are handled by the manufacturer's service centre, which "
        "usually repairs or replaces the product within two weeks."
    ),
)


def rag_prompt(question: str, documents: tuple[str, ...] | list[str]) -> str:
    context = "\n\n".join(documents)
    return f"{RAG_PREAMBLE}\nQuestion: {question} \nContext: {context} \nAnswer:"


def rag_body(stream: bool = False, *, numbered: bool = False, max_tokens: int | None = None) -> bytes:
    """The RAG request; `numbered`: its question holds a "{n}" for the load generator to fill in.  The bench
    upstream streams `max_tokens` content chunks (every proxy forwards the field as it is)."""
    question = NUMBERED_QUESTION if numbered else QUESTION
    body: dict[str, object] = {
        "messages": [{"content": rag_prompt(question, DOCUMENTS), "role": "user"}],
        "model": MODEL,
        "stream": stream,
        "temperature": 0.0,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return orjson.dumps(body)


def chat_body(stream: bool = False, *, numbered: bool = False) -> bytes:
    """A non-RAG chat request of about the same size as `rag_body()` (numbered: holds a "{n}" like it)."""
    filler = (
        "I am planning a three-week trip through the north of Italy in late spring and would like some help "
        "with the itinerary. We will land in Milan, want to spend a few days around the lakes, then continue "
        "to Verona, Venice and the Dolomites before flying home from Venice. We like long walks, small "
        "restaurants and museums, but we do not want to spend every day in a car or on a train. "
    )
    user = filler * 4 + "Could you suggest how many nights to spend in each place and in which order?"
    user = user[: len(rag_prompt(QUESTION, DOCUMENTS)) - 60]
    if numbered:
        user = f"Trip {{n}}. {user[:-12]}"
    body: dict[str, object] = {
        "messages": [
            {"content": "You are a helpful travel assistant.", "role": "system"},
            {"content": user, "role": "user"},
        ],
        "model": MODEL,
        "stream": stream,
        "temperature": 0.0,
    }
    return orjson.dumps(body)


if __name__ == "__main__":
    from ragtap.recognise import recognise

    for name, raw in (("rag", rag_body()), ("chat", chat_body()), ("rag numbered", rag_body(numbered=True).replace(b"{n}", b"123")),
                      ("chat numbered", chat_body(numbered=True).replace(b"{n}", b"123"))):
        result = recognise(orjson.loads(raw))
        print(f"{name}: {len(raw)} bytes, reason={result.reason}, inject={result.inject}, "
              f"documents={len(result.context.documents) if result.context else 0}")
