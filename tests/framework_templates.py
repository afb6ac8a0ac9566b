"""RAG prompt templates exactly as LangChain and LlamaIndex render them (copied from the frameworks' sources),
shared by the recogniser's tests and the proxy's tests."""

# ------------------------------------------------------------------------------------------------------------
# Templates, copied from the frameworks (langchain hub rlm/rag-prompt, langchain stuff_prompt.py,
# llama_index.core.prompts.chat_prompts, llama_index.core.chat_engine.context).
# ------------------------------------------------------------------------------------------------------------

RLM_RAG_PROMPT = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question. If you don't know the answer, just say that you don't know. Use three sentences maximum and "
    "keep the answer concise.\nQuestion: {question} \nContext: {context} \nAnswer:"
)
LLAMAINDEX_QA_SYSTEM = (
    "You are an expert Q&A system that is trusted around the world.\n"
    "Always answer the query using the provided context information, and not prior knowledge.\n"
    "Some rules to follow:\n"
    "1. Never directly reference the given context in your answer.\n"
    "2. Avoid statements like 'Based on the context, ...' or 'The context information ...' or anything along "
    "those lines."
)
LLAMAINDEX_TEXT_QA = (
    "Context information is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    "Query: {query_str}\n"
    "Answer: "
)
LLAMAINDEX_CONTEXT_CHAT = (
    "Use the context information below to assist the user.\n--------------------\n{context_str}\n--------------------\n"
)
LANGCHAIN_STUFF = (
    "Use the following pieces of context to answer the question at the end. If you don't know the answer, just "
    "say that you don't know, don't try to make up an answer.\n\n{context}\n\nQuestion: {question}\nHelpful Answer:"
)
LANGCHAIN_STUFF_CHAT_SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an answer.\n"
    "----------------\n{context}"
)
LANGCHAIN_TUTORIAL_SYSTEM = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question. If you don't know the answer, say that you don't know. Use three sentences maximum and keep "
    "the answer concise.\n\n{context}"
)
LANGCHAIN_LCEL = "Answer the question based only on the following context:\n{context}\n\nQuestion: {question}\n"
