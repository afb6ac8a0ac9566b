"""LangChain on the Responses API (`ChatOpenAI(use_responses_api=True)`) through ragtap, in its pinned venv (see
tests/test_frameworks.py): the chain's prompt is recognised in the Responses `input`, the instruction injected,
and the app receives exactly the answer, streamed and not."""

from __future__ import annotations

import pytest

from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected

from test_frameworks import framework_python, run_app

ANSWER = "The billing service listens on port 8443."
SUPPORT = "The billing service listens on port 8443 behind the internal load balancer."


def script(body):  # type: ignore[no-untyped-def]
    return ScriptedReply(json_reply(ANSWER, SUPPORT) if was_injected(body) else ANSWER)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_langchain_responses_api(start_proxy, stream: bool) -> None:
    python = framework_python("langchain")
    proxy = await start_proxy(script)
    result = await run_app(python, "langchain_app.py", proxy.server.base_url, "lcel_system_responses", stream)
    assert result["answer"] == ANSWER
    assert "input" in result["requests"][0] and proxy.upstream.requests[-1].path == "/v1/responses"
    exchange = await proxy.collector.exchange()
    assert (exchange.route, exchange.rag_source, exchange.injected) == ("/v1/responses", "langchain", True)
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER and interaction.supporting == SUPPORT and interaction.unscored_reason is None
