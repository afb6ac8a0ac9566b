"""LangChain's `ChatAnthropic` (the Anthropic Messages API) against ragtap, in its own pinned venv
(tests/frameworks/anthropic.txt, built by scripts/test-envs.sh), pointed at ragtap by base URL only; ragtap forwards
to the scripted upstream speaking the Messages wire format.  Asserted: the recognition rule, the injection into
`system`, and the exact answer the app receives, streamed and not.
"""

from __future__ import annotations

import pytest

from conftest import ANSWER, fixed, json_content
from test_frameworks import framework_python, run_app


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("layout", "rule"), [("lcel_system", "langchain"), ("document_blocks", "anthropic_documents")])
async def test_chat_anthropic(start_proxy, layout: str, rule: str, stream: bool) -> None:
    python = framework_python("anthropic")
    proxy = await start_proxy(fixed("Here is the JSON:\n```json\n" + json_content() + "\n```"))
    result = await run_app(python, "anthropic_app.py", proxy.url, layout, stream)
    assert result["answer"] == ANSWER
    [request] = proxy.upstream.requests
    assert request.path == "/v1/messages" and request.body.get("stream", False) is stream
    assert "supporting_content" in str(request.body["system"])
    record = await proxy.collector.exchange()
    assert (record.recognition, record.injected, record.provider) == (rule, True, "anthropic")
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER and interaction.question.startswith("Which port")
