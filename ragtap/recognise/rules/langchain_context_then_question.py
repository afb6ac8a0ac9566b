"""LangChain "stuff" and LCEL prompts: context first, then `Question:` in the last user message."""

from __future__ import annotations


from ragtap.recognise.text import make_context, rfind_label, split_documents, strip_answer_line
from ragtap.types import RagContext

_CONTEXT_THEN_QUESTION_INTROS = (
    # langchain.chains.question_answering.stuff_prompt.prompt_template (RetrievalQA / load_qa_chain, "stuff")
    "Use the following pieces of context to answer the question at the end.",
    # The LCEL RAG example of the LangChain docs.
    "Answer the question based only on the following context:",
)


def langchain_context_then_question(text: str) -> RagContext | None:
    """The two classic LangChain prompts with an unlabelled context followed by a `Question:` line.

    `RetrievalQA` / `load_qa_chain` "stuff" prompt (completion-style, one user message)::

        Use the following pieces of context to answer the question at the end. If you don't know the answer,
        just say that you don't know, don't try to make up an answer.

        {context}

        Question: {question}
        Helpful Answer:

    and the LCEL example of the LangChain docs::

        Answer the question based only on the following context:
        {context}

        Question: {question}

    The context starts on the line after the intro sentence and ends at the *last* `Question:` line.
    """
    for intro in _CONTEXT_THEN_QUESTION_INTROS:
        i = text.find(intro)
        if i >= 0:
            break
    else:
        return None
    start = text.find("\n", i + len(intro))
    if start < 0:
        return None
    q = rfind_label(text, "Question:", start + 1)
    if q < 0:
        return None
    question = strip_answer_line(text[q + len("Question:") :])
    return make_context(question, split_documents(text[start + 1 : q]), "langchain")
