"""An OpenAI Agents SDK app as its users write it, run inside the pinned openai-agents venv by
tests/test_frameworks.py.

    python openai_agents_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

The agent has one function tool in the shape of the hosted `file_search` tool (the hosted tool itself exists only
on the Responses API): it returns the retrieved passages as JSON `[{"file_name", "score", "text"}]`.  The SDK
defaults to the Responses API; ragtap proxies chat completions, so the app switches the SDK to chat completions
in one of the two documented ways (LAYOUT):
- `default_api`: `set_default_openai_client(AsyncOpenAI(base_url=...))` + `set_default_openai_api("chat_completions")`;
- `chat_model`: `OpenAIChatCompletionsModel(model=..., openai_client=AsyncOpenAI(base_url=...))` on the agent.
Tracing is disabled (it would upload to the platform).  The passages are synthetic.
"""

from __future__ import annotations

import asyncio
import json
import sys

import capture  # noqa: F401  (records the request bodies)
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

QUESTION = "Which port does the billing service listen on?"
FILES = [
    ("billing.md", 0.91, "The billing service listens on port 8443 behind the internal load balancer."),
    ("owners.md", 0.74, "The billing service is owned by the Falcon team; on-call rotates every Monday."),
]


@function_tool
def file_search(query: str) -> str:
    """Search the team's wiki files and return the most relevant passages.

    Args:
        query: What to search for.
    """
    return json.dumps([{"file_name": name, "score": score, "text": text} for name, score, text in FILES])


async def main() -> None:
    base_url, layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0, timeout=30)
    instructions = "You answer questions about the team's services. Use the file_search tool to find the answer."
    if layout == "default_api":
        set_default_openai_client(client, use_for_tracing=False)
        set_default_openai_api("chat_completions")
        agent = Agent(name="Wiki assistant", instructions=instructions, tools=[file_search], model="gpt-test")
    elif layout == "chat_model":
        model = OpenAIChatCompletionsModel(model="gpt-test", openai_client=client)
        agent = Agent(name="Wiki assistant", instructions=instructions, tools=[file_search], model=model)
    else:
        raise SystemExit(f"unknown layout {layout!r}")
    if stream:
        result = Runner.run_streamed(agent, QUESTION)
        async for _event in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, QUESTION)
    print(json.dumps({"answer": result.final_output, "requests": capture.SENT}))


if __name__ == "__main__":
    asyncio.run(main())
