"""Real framework code against ragtap: each framework runs in its own pinned venv (tests/frameworks/NAME.txt,
built by scripts/test-envs.sh, which scripts/test.sh calls), pointed at ragtap by base URL only; ragtap
forwards to the scripted upstream.  Asserted: the recognition rule, and the exact answer the app receives,
streamed and not.  The request bodies the framework sent are compared with the small fixtures kept in
tests/fixtures/frameworks/ (re-written with RAGTAP_UPDATE_FIXTURES=1), which tests/test_recognise_fixtures.py
recognises without the framework installed.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from ragtap.testing.upstream import ScriptedReply

from conftest import ANSWER, fixed, json_content

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
APP_TIMEOUT_S = 60.0


def framework_python(name: str) -> Path:
    env = ROOT / ".ragtap-cache" / "frameworks" / name
    python = env / "bin" / "python"
    if (env / ".installed").is_file() and python.exists():
        return python
    reason = (env / "failed").read_text().strip() if (env / "failed").is_file() else "not built"
    message = f"{name} test venv unavailable ({reason}): run scripts/test-envs.sh"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


async def run_app(python: Path, script: str, base_url: str, layout: str, stream: bool) -> dict:
    process = await asyncio.create_subprocess_exec(
        str(python), str(ROOT / "tests" / "frameworks" / script), base_url, layout, "1" if stream else "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-test", "NO_PROXY": "127.0.0.1"},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), APP_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


def check_fixture(name: str, bodies: list[dict]) -> None:
    """The messages of every request the framework sent, kept as a fixture (stream flag and options dropped)."""
    assert bodies, f"{name}: no request body was captured"
    kept = {"requests": [{"messages": body["messages"]} for body in bodies]}
    path = FIXTURES / f"{name}.json"
    if os.environ.get("RAGTAP_UPDATE_FIXTURES") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == kept, f"{name}: the framework now sends another layout; see {path}"


async def check_exchanges(proxy, rules: list[str]) -> None:  # type: ignore[no-untyped-def]
    for n, rule in enumerate(rules, 1):
        record = await proxy.collector.exchange(n)
        assert record.recognition == rule and record.injected, (n, record.recognition)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("layout", "rule"),
    [("lcel_system", "langchain"), ("lcel_human", "langchain"), ("agent_middleware", "generic")],
)
async def test_langchain(start_proxy, layout: str, rule: str, stream: bool) -> None:
    python = framework_python("langchain")
    proxy = await start_proxy(fixed(json_content()))
    result = await run_app(python, "langchain_app.py", proxy.server.base_url, layout, stream)
    assert result["answer"] == ANSWER
    await check_exchanges(proxy, [rule])
    check_fixture(f"langchain_{layout}", result["requests"])


def agent_script(tool_name: str):  # type: ignore[no-untyped-def]
    """First turn: call the retrieval tool; once a tool result is in the conversation: answer."""
    def script(body: dict) -> ScriptedReply:
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            return ScriptedReply(ANSWER)
        call = {"id": "call_1", "type": "function", "function": {"name": tool_name, "arguments": json.dumps({"query": "billing port"})}}
        return ScriptedReply(tool_calls=[call])
    return script


@pytest.mark.parametrize("stream", [False, True])
async def test_langchain_agent_with_retrieval_tool(start_proxy, stream: bool) -> None:
    """create_agent offers its tool on every turn, so ragtap recognises the tool results but does not inject
    (reason client_tools): the answer is the upstream's, unchanged."""
    python = framework_python("langchain")
    proxy = await start_proxy(agent_script("retrieve_context"))
    result = await run_app(python, "langchain_app.py", proxy.server.base_url, "agent_tool", stream)
    assert result["answer"] == ANSWER
    first, second = await proxy.collector.exchange(1), await proxy.collector.exchange(2)
    assert first.recognition == "no_context" and first.rag_source is None
    assert second.recognition == "client_tools" and second.rag_source == "tool" and not second.injected
    check_fixture("langchain_agent_tool", result["requests"])


LLAMAINDEX = [
    ("query:compact", ["llamaindex_text_qa"]),
    ("query:simple_summarize", ["llamaindex_text_qa"]),
    ("query:tree_summarize", ["llamaindex_text_qa"]),
    ("query:refine", ["llamaindex_text_qa", "llamaindex_refine"]),
    ("chat:context", ["llamaindex_context_chat"]),
    ("chat:condense_plus_context", ["generic"]),
    ("chat:condense_question", ["llamaindex_text_qa"]),
    # `best` (the default chat mode): in llama-index-core 0.14 it builds a CondensePlusContextChatEngine
    # (the agent-based `best` was removed with the legacy agents), so it sends condense_plus_context's layout.
    ("chat:best", ["generic"]),
    ("query:citation", ["llamaindex_citation"]),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("layout", "rules"), LLAMAINDEX)
async def test_llamaindex(start_proxy, layout: str, rules: list[str], stream: bool) -> None:
    python = framework_python("llamaindex")
    proxy = await start_proxy(fixed(json_content()))
    result = await run_app(python, "llamaindex_app.py", proxy.server.base_url, layout, stream)
    assert result["answer"] == ANSWER
    assert [r.body.get("stream", False) for r in proxy.upstream.requests] == [stream] * len(rules)
    await check_exchanges(proxy, rules)
    check_fixture("llamaindex_" + layout.replace(":", "_"), result["requests"])


DSPY_REPLY = ("[[ ## reasoning ## ]]\nThe first passage names the port.\n\n[[ ## response ## ]]\nThe billing service "
              "listens on port 8443.\n\n[[ ## completed ## ]]")


@pytest.mark.parametrize("stream", [False, True])
async def test_dspy(start_proxy, stream: bool) -> None:
    """Streamed: `dspy.streamify` with a StreamListener on `response` (a streamed completion through ragtap); the
    app gets the response field's chunks and the final prediction, both exactly the upstream's answer."""
    python = framework_python("dspy")
    proxy = await start_proxy(fixed(json_content(answer=DSPY_REPLY)))
    result = await run_app(python, "dspy_app.py", proxy.server.base_url, "chain_of_thought", stream)
    assert result["answer"] == "The billing service listens on port 8443."
    if stream:
        assert result["streamed"].strip() == "The billing service listens on port 8443."
    assert proxy.upstream_body(0).get("stream", False) is stream
    await check_exchanges(proxy, ["dspy"])
    check_fixture("dspy_chain_of_thought", result["requests"])


@pytest.mark.parametrize("stream", [False, True])
async def test_haystack(start_proxy, stream: bool) -> None:
    python = framework_python("haystack")
    proxy = await start_proxy(fixed(json_content()))
    result = await run_app(python, "haystack_app.py", proxy.server.base_url, "chat_prompt_builder", stream)
    assert result["answer"] == ANSWER
    await check_exchanges(proxy, ["langchain"])  # Context: / Question: / Answer: is the labelled layout
    check_fixture("haystack_chat_prompt_builder", result["requests"])


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("layout", ["default_api", "chat_model"])
async def test_openai_agents_with_file_search_tool(start_proxy, layout: str, stream: bool) -> None:
    """The OpenAI Agents SDK switched to chat completions (`set_default_openai_api("chat_completions")` or
    `OpenAIChatCompletionsModel`), with a file_search-style function tool.  The SDK offers its tools on every turn,
    so ragtap recognises the tool results (rule `tool`) but does not inject (reason client_tools): the answer is the
    upstream's, unchanged."""
    python = framework_python("openai_agents")
    proxy = await start_proxy(agent_script("file_search"))
    result = await run_app(python, "openai_agents_app.py", proxy.server.base_url, layout, stream)
    assert result["answer"] == ANSWER
    first, second = await proxy.collector.exchange(1), await proxy.collector.exchange(2)
    assert first.recognition == "no_context" and first.rag_source is None
    assert second.recognition == "client_tools" and second.rag_source == "tool" and not second.injected
    assert [body.get("stream", False) for body in result["requests"]] == [stream, stream]
    assert all(body["tools"][0]["function"]["name"] == "file_search" for body in result["requests"])
    check_fixture(f"openai_agents_{layout}", result["requests"])


REWRITTEN = "On which port does the billing service accept connections?"


def langgraph_script():  # type: ignore[no-untyped-def]
    """The tutorial graph's calls, told apart by what each node sends: the first grade says "no" (so the graph
    rewrites the question and retrieves again), the second "yes"; the final generation is answered in ragtap's
    injected format (JSON answer + supporting), so the app only gets ANSWER when ragtap injected and split it."""
    grades = iter(["no", "yes"])

    def script(body: dict) -> ScriptedReply:
        messages = body.get("messages", [])
        # The last user message (ragtap's injection appends a system message after it).
        last = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        if isinstance(last, str) and "Use the following pieces of retrieved context" in last:
            return ScriptedReply(json_content())  # (ragtap's injection sets its own response_format)
        if body.get("response_format"):
            return ScriptedReply(json.dumps({"binary_score": next(grades, "yes")}))
        if isinstance(last, str) and last.startswith("Look at the input"):
            return ScriptedReply(REWRITTEN)
        if body.get("tools") and messages[-1].get("role") == "user":
            call = {"id": f"call_{len(messages)}", "type": "function",
                    "function": {"name": "retrieve_wiki_pages", "arguments": json.dumps({"query": "billing port"})}}
            return ScriptedReply(tool_calls=[call])
        return ScriptedReply("unexpected request")
    return script


@pytest.mark.parametrize("stream", [False, True])
async def test_langgraph_agentic_rag(start_proxy, stream: bool) -> None:
    """The LangGraph tutorial's agentic RAG (retriever tool, grade, rewrite, generate).  Per call: the tool-calling
    turns have no context yet (no_context; the rewritten question is the last user message); the grader asks for
    structured output (its "retrieved document" layout is not a RAG answer: no_context); the final generation is
    recognised (rlm-style `Question:`/`Context:` in one user message) and injected, and the app gets exactly the
    answer."""
    python = framework_python("langgraph")
    proxy = await start_proxy(langgraph_script())
    result = await run_app(python, "langgraph_app.py", proxy.server.base_url, "agentic_rag", stream)
    assert result["answer"] == ANSWER
    expected = ["no_context", "no_context", "no_context", "no_context", "no_context", "langchain"]
    records = [await proxy.collector.exchange(n) for n in range(1, len(expected) + 1)]
    assert [r.recognition for r in records] == expected
    assert [r.injected for r in records] == [False] * 5 + [True]
    assert all(body.get("stream", False) is stream for body in result["requests"])
    check_fixture("langgraph_agentic_rag", result["requests"])
