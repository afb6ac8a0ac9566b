"""A Messages API exchange as the exporters and the seams see it (issue 25): the OTel chat span says provider
`anthropic` with the usage in Anthropic's terms and the overhead priced from the Claude entry of `[cost]`;
Prometheus counts its tokens; and issue 22's two seams (docs/architecture.md) apply to Messages as to chat and
Responses: a whole reply's answer replaced in its text block, a stream's answer gated and released before the
answer block's `content_block_stop`.  All new with the route (before, /v1/messages was a passthrough)."""

from __future__ import annotations

import json

from ragtap.cost import PriceTable, instruction_tokens
from ragtap.exporters.settings import OtelSettings
from ragtap.prompts import prompt_text
from ragtap.testing.upstream import ScriptedReply

from conftest import ANSWER, SUPPORTING, json_content, sse_events
from test_exchange_path_seams import Badge, Hold, _steps
from test_otel_genai import otel_proxy  # noqa: F401 - the fixture
from test_proxy_messages import MODEL, answering, ask, client, raw, via


async def test_the_span_says_anthropic_with_anthropic_usage_and_claude_prices(otel_proxy) -> None:  # noqa: F811
    openai_client, collector, spans, _, _, prometheus = await otel_proxy(answering(cache_read_tokens=30, cache_creation_tokens=5),
                                                                         OtelSettings(enabled=True))
    async with client(str(openai_client.base_url).rstrip("/").removesuffix("/v1")) as sdk:  # ragtap's address
        message = await sdk.messages.create(**ask())
    assert message.content[0].text == ANSWER
    await collector.assessment(timeout=20)
    exchange = await collector.exchange()
    chat = next(s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}")
    a = chat.attributes
    assert a["gen_ai.provider.name"] == "anthropic"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.cache_read.input_tokens"], a["gen_ai.usage.cache_creation.input_tokens"]) == (135, 30, 5)
    assert a["gen_ai.usage.output_tokens"] == message.usage.output_tokens
    assert a["gen_ai.response.finish_reasons"] == ("end_turn",)
    instruction = instruction_tokens(prompt_text("supporting_content"), MODEL)
    price = PriceTable().price(MODEL)
    assert price is not None and (price.input, price.output) == (1.0, 5.0)  # the claude-haiku-4-5 entry (a dated snapshot of it)
    expected = (instruction * 1.0 + exchange.supporting_tokens * 5.0) / 1e6
    assert a["ragtap.overhead.cost_usd"] == exchange.overhead.cost_usd == expected
    body = prometheus.render()[0].decode()
    assert f'ragtap_tokens_total{{kind="input",model="{MODEL}"}} 135.0' in body


async def test_a_whole_messages_reply_step_replaces_the_answer_in_its_text_block(start_proxy) -> None:
    badge = Badge()
    proxy = await start_proxy(answering(), steps=_steps(badge), client_timeout=60.0)
    async with via(proxy) as sdk:
        message = await sdk.messages.create(**ask())
    upstream = json.loads(proxy.upstream.sent[-1])
    _, assessment = await proxy.collector.assessment()
    assert message.content[0].text == f"[{assessment.verdict.value}] {ANSWER}" and badge.seen == [ANSWER]
    assert (message.id, message.stop_reason, message.usage.output_tokens) == (upstream["id"], "end_turn", upstream["usage"]["output_tokens"])


async def test_a_messages_stream_gate_releases_before_the_answer_block_stops(start_proxy) -> None:
    holds: list[Hold] = []
    proxy = await start_proxy(lambda body: ScriptedReply("Here is the JSON:\n" + json_content(), piece_chars=4), steps=_steps(holds=holds),
                              client_timeout=60.0)
    async with via(proxy) as sdk:
        events = sse_events(await raw(sdk, **ask(), stream=True))
        async with sdk.messages.stream(**ask()) as stream:
            final = await stream.get_final_message()
    deltas = [(i, e["delta"]["text"]) for i, e in enumerate(events) if e["type"] == "content_block_delta"]
    stop_at = next(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    assert [text for _, text in deltas] == [f"<{ANSWER}>"] and deltas[0][0] < stop_at
    assert final.content[0].text == f"<{ANSWER}>"
    assert "".join(holds[0].fed) == ANSWER and holds[0].results[0].supporting == SUPPORTING
