"""The guard through ragtap, end to end: the official openai SDK as the app, the scripted upstream behind, real
HTTP; chat completions and the Responses API, streamed and not, every action.  An answer with one invented
sentence is stripped / blocked / retried; a faithful answer arrives byte for byte; a scorer that fails or is
slower than the deadline releases the answer unchanged, counted.  (Before the guard nothing acted on a verdict:
every assertion on a changed answer fails on the previous code.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragtap.cost import instruction_tokens
from ragtap.prompts import prompt_text
from ragtap.testing.upstream import ScriptedReply

from test_guard_core import GatedEmbedder as SlowEmbedder

MODEL = "gpt-4o-mini"
DOC = ("The Nitro hypervisor is a lightweight hypervisor that manages memory and CPU allocation for EC2 instances. "
       "All the public facing APIs for interacting with EC2 instances that run using the Nitro hypervisor will remain the same.")
QUESTION = "Will the Nitro hypervisor change the APIs used to interact with EC2 instances?"
KEPT_1 = "No, the public facing APIs for interacting with EC2 instances will remain the same."
INVENTED = "It was designed by Alice Zhang at the Paris lab in 1987."
KEPT_2 = "The Nitro hypervisor manages memory and CPU allocation for EC2 instances."
SUPPORT = "All the public facing APIs for interacting with EC2 instances that run using the Nitro hypervisor will remain the same."
FAITHFUL = f"{KEPT_1} {KEPT_2}"
WITH_INVENTION = f"{KEPT_1} {INVENTED} {KEPT_2}"
LISTED = f"In short:\n1. {KEPT_1}\n2. {INVENTED}\n3. {KEPT_2}"
BLOCK = "Sorry, I cannot answer that reliably."
RETRY_MARKER = "Your previous answer"  # in ragtap/prompts/guard_retry.toml


def reply_json(answer: str) -> str:
    return json.dumps({"answer": answer, "supporting_content": SUPPORT})


def script(first: str, second: str = FAITHFUL, piece_chars: int = 4):  # type: ignore[no-untyped-def]
    """The model answers `first`; asked again with the guard's stricter instruction, `second`."""

    def answer(body: dict[str, Any]) -> ScriptedReply:
        text = json.dumps(body)
        return ScriptedReply(reply_json(second if RETRY_MARKER in text else first), piece_chars=piece_chars)

    return answer


EXTRA = {"ragtap": {"question": QUESTION, "documents": [DOC]}}
MESSAGES = [{"role": "user", "content": QUESTION}]
# A deadline no check misses on a loaded test machine (the tests of the deadline set their own): the guard acts.
ACTING = {"block_message": BLOCK, "deadline_ms": 10_000}
FLAGS = {"guard": ACTING}


async def ask(proxy, api: str, stream: bool, guard: str | None = None, extra: dict[str, Any] | None = None) -> tuple[str, dict[str, str], list[Any]]:  # type: ignore[no-untyped-def]
    """(text the app received, response headers, the events of a stream)."""
    headers = {"x-ragtap-guard": guard} if guard else {}
    body = extra or EXTRA
    if api == "chat":
        if stream:
            raw = await proxy.client.chat.completions.with_raw_response.create(
                model=MODEL, messages=MESSAGES, stream=True, extra_body=body, extra_headers=headers)
            chunks = [c async for c in raw.parse()]
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), dict(raw.headers), chunks
        raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, extra_body=body, extra_headers=headers)
        completion = raw.parse()
        return completion.choices[0].message.content or "", dict(raw.headers), [completion]
    if api == "messages":  # the official anthropic SDK
        import anthropic

        claude = anthropic.AsyncAnthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0, timeout=60.0)
        kwargs: dict[str, Any] = dict(model="claude-haiku-4-5-20251001", max_tokens=512, messages=MESSAGES, extra_body=body,
                                      extra_headers=headers)
        if stream:
            async with claude.messages.stream(**kwargs) as events:
                seen = [e async for e in events]
                final = await events.get_final_message()
            deltas = "".join(e.delta.text for e in seen if e.type == "content_block_delta" and e.delta.type == "text_delta")
            assert deltas == final.content[0].text  # the closing events carry what the deltas delivered
            return deltas, {}, seen
        raw = await claude.messages.with_raw_response.create(**kwargs)
        message = await raw.parse()
        return message.content[0].text, dict(raw.headers), [message]
    if stream:
        async with proxy.client.responses.stream(model=MODEL, input=QUESTION, extra_body=body, extra_headers=headers) as events:
            seen = [e async for e in events]
            final = await events.get_final_response()
        deltas = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
        assert deltas == final.output_text  # the done events carry what the deltas delivered
        return deltas, {}, seen
    raw = await proxy.client.responses.with_raw_response.create(model=MODEL, input=QUESTION, extra_body=body, extra_headers=headers)
    response = raw.parse()
    return response.output_text, dict(raw.headers), [response]


API_STREAM = [("chat", False), ("chat", True), ("responses", False), ("responses", True), ("messages", False), ("messages", True)]
IDS = ["chat", "chat-stream", "responses", "responses-stream", "messages", "messages-stream"]


async def guard_record(proxy, n: int = 1):  # type: ignore[no-untyped-def]
    record = await proxy.collector.exchange(n)
    assert record.guard is not None
    return record.guard


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_strip_removes_the_invented_sentence(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS)
    text, headers, _ = await ask(proxy, api, stream, "strip")
    assert text == FAITHFUL
    guard = await guard_record(proxy)
    assert (guard.action, guard.outcome, guard.removed_claims) == ("strip", "stripped", 1)
    assert (guard.original_answer, guard.delivered_answer) == (WITH_INVENTION, FAITHFUL)
    if not stream:
        assert headers["x-ragtap-guard"] == "strip; outcome=stripped"
        start = WITH_INVENTION.index(INVENTED)
        assert json.loads(headers["x-ragtap-unsupported-claims"]) == [[start, start + len(INVENTED)]]
    interaction, assessment = await proxy.collector.assessment()
    assert interaction.answer == WITH_INVENTION and assessment.verdict.value == "unsupported_answer"  # the model's answer is scored
    assert interaction.exchange is not None and interaction.exchange.output_text == FAITHFUL  # and the delivered one recorded


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_strip_renumbers_a_list(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(LISTED), flags=FLAGS)
    text, _, _ = await ask(proxy, api, stream, "strip")
    assert text == f"In short:\n1. {KEPT_1}\n2. {KEPT_2}"


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_block_replaces_the_answer(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS)
    text, _, events = await ask(proxy, api, stream, "block")
    # A stream has sent the sentences before the first unsupported one already: it ends there with the message.
    assert text == (f"{KEPT_1}\n\n{BLOCK}" if stream else BLOCK)
    assert (await guard_record(proxy)).outcome == "blocked"
    if api == "chat" and stream:
        finishes = [c.choices[0].finish_reason for c in events if c.choices and c.choices[0].finish_reason]
        assert finishes == ["stop"]


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_retry_delivers_the_second_answer_when_it_passes(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION, second=FAITHFUL), flags=FLAGS)
    text, headers, events = await ask(proxy, api, stream, "retry")
    assert text == FAITHFUL
    assert len(proxy.upstream.requests) == 2 and RETRY_MARKER in json.dumps(proxy.upstream.requests[1].body)
    assert proxy.upstream.requests[1].body.get("stream") is False
    guard = await guard_record(proxy)
    assert (guard.outcome, guard.retry) == ("retried", "passed")
    record = await proxy.collector.exchange()
    # the second request's usage (the scripted upstream: 100 prompt tokens, one output token per word)
    assert (record.retry_input_tokens, record.retry_output_tokens) == (100, len(reply_json(FAITHFUL).split()))
    # ragtap's overhead: the instruction (where the route counts it: not Responses yet) and the whole retry
    model = record.response_model or record.request_model
    instruction = instruction_tokens(prompt_text("supporting_content"), model) if record.injected_instruction else 0
    assert record.overhead is not None and record.overhead.input_tokens == instruction + 100
    assert record.overhead.output_tokens == (record.supporting_tokens or 0) + record.retry_output_tokens
    if not stream:
        second = json.loads(proxy.upstream.sent[1])
        assert events[0].id == second["id"]  # the app gets the reply whose text it receives


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_retry_falls_back_to_strip_when_the_second_answer_fails_too(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION, second=WITH_INVENTION), flags=FLAGS)
    text, _, _ = await ask(proxy, api, stream, "retry")
    assert text == FAITHFUL
    guard = await guard_record(proxy)
    assert (guard.outcome, guard.retry) == ("stripped", "failed")


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
@pytest.mark.parametrize("action", ["annotate", "strip", "block", "retry"])
async def test_a_faithful_answer_arrives_byte_for_byte(start_proxy, api: str, stream: bool, action: str) -> None:
    answer = f"{KEPT_1}\n\n- {KEPT_2}\n"
    proxy = await start_proxy(script(answer), flags=FLAGS)
    text, headers, _ = await ask(proxy, api, stream, action)
    assert text == answer
    guard = await guard_record(proxy)
    assert guard.outcome == ("annotated" if action == "annotate" else "passed") and guard.delivered_answer is None
    assert len(proxy.upstream.requests) == 1
    if not stream:
        assert headers["x-ragtap-verdict"] == "grounded" and headers["x-ragtap-unsupported-claims"] == "[]"


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_annotate_carries_the_verdict(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS)
    extra = {"ragtap": {**EXTRA["ragtap"], "guard": {"action": "annotate", "annotate_body": True}}}
    text, headers, events = await ask(proxy, api, stream, extra=extra)
    assert text == WITH_INVENTION
    start = WITH_INVENTION.index(INVENTED)
    if not stream:  # (a stream's annotation is its last SSE comment: next test)
        assert headers["x-ragtap-verdict"] == "unsupported_answer"
        body = events[0].model_extra or {}
        assert body["ragtap"]["verdict"] == "unsupported_answer" and body["ragtap"]["unsupported_claims"] == [[start, start + len(INVENTED)]]
    assert (await guard_record(proxy)).outcome == "annotated"
    _, assessment = await proxy.collector.assessment()
    await proxy.collector.settle(1)
    assert len(proxy.collector.scored) == 1 and assessment.verdict.value == "unsupported_answer"  # scored once, before the response


async def test_a_stream_annotation_is_a_final_sse_comment(start_proxy) -> None:
    import aiohttp

    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS)
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{proxy.url}/v1/chat/completions", headers={"x-ragtap-guard": "annotate"},
                                json={"model": MODEL, "messages": MESSAGES, "stream": True, **EXTRA}) as response:
            raw = (await response.read()).decode()
    comments = [line for line in raw.splitlines() if line.startswith(": ragtap-guard ")]
    assert len(comments) == 1 and raw.index(comments[0]) < raw.index("data: [DONE]")
    fields = json.loads(comments[0][len(": ragtap-guard "):])
    start = WITH_INVENTION.index(INVENTED)
    assert fields == {"guard": "annotate", "outcome": "annotated", "verdict": "unsupported_answer",
                      "unsupported_claims": [[start, start + len(INVENTED)]], "contradicted_claims": []}


class BrokenEmbedder:
    name, dim = "broken", 384

    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("embedding backend is down")


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
@pytest.mark.parametrize("action", ["strip", "block", "retry"])
async def test_a_scorer_slower_than_the_deadline_releases_the_answer_unchanged(start_proxy, embedder, api: str, stream: bool, action: str) -> None:
    slow = SlowEmbedder(embedder)
    proxy = await start_proxy(script(WITH_INVENTION), flags={"guard": {"block_message": BLOCK, "deadline_ms": 50}}, embedder_override=slow)
    try:
        text, _, _ = await ask(proxy, api, stream, action)  # (the client gives up after 15 s; the scorer takes 60)
        assert text == WITH_INVENTION
        guard = await guard_record(proxy)
        assert guard.outcome == "timeout" and guard.delivered_answer is None
        assert len(proxy.upstream.requests) == 1
    finally:
        slow.gate.set()


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_a_failing_scorer_releases_the_answer_unchanged(start_proxy, api: str, stream: bool) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS, embedder_override=BrokenEmbedder())
    text, _, _ = await ask(proxy, api, stream, "block")
    assert text == WITH_INVENTION
    assert (await guard_record(proxy)).outcome == "scorer_error"


async def test_the_guard_is_off_by_default_and_configurable(start_proxy) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags={"guard": {**ACTING, "action": "strip"}})
    assert (await ask(proxy, "chat", False))[0] == FAITHFUL  # [guard] action
    assert (await ask(proxy, "chat", False, "off"))[0] == WITH_INVENTION  # the request turns it off
    assert "x-ragtap-guard" not in {k.lower() for k in proxy.upstream.requests[-1].headers}  # not forwarded
    off = await start_proxy(script(WITH_INVENTION))  # (no [guard] at all: the defaults)
    text, headers, _ = await ask(off, "chat", False)
    assert text == WITH_INVENTION and "x-ragtap-guard" not in headers
    assert (await off.collector.exchange()).guard is None


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_a_stream_sends_each_sentence_once_checked_while_the_model_still_writes(start_proxy, api: str) -> None:
    proxy = await start_proxy(script(WITH_INVENTION), flags=FLAGS)
    # The upstream writes one event every 10 ms: the answer, then the supporting content (~30 more events).
    proxy.upstream.cutter = lambda stream: [i + 2 for i in range(len(stream)) if stream.startswith(b"\n\n", i)]
    proxy.upstream.write_delay_s = 0.01
    received, upstream_done_at = "", []
    if api == "chat":
        pieces = (c.choices[0].delta.content or "" async for c in await proxy.client.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True, extra_body=EXTRA, extra_headers={"x-ragtap-guard": "strip"}) if c.choices)
    elif api == "responses":
        stream = await proxy.client.responses.create(model=MODEL, input=QUESTION, stream=True, extra_body=EXTRA,
                                                     extra_headers={"x-ragtap-guard": "strip"})
        pieces = (e.delta async for e in stream if e.type == "response.output_text.delta")
    else:
        import anthropic

        claude = anthropic.AsyncAnthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0, timeout=60.0)
        stream = await claude.messages.create(model="claude-haiku-4-5-20251001", max_tokens=512, messages=MESSAGES, stream=True,
                                              extra_body=EXTRA, extra_headers={"x-ragtap-guard": "strip"})
        pieces = (e.delta.text async for e in stream if e.type == "content_block_delta" and e.delta.type == "text_delta")
    async for piece in pieces:
        if piece:  # (the role chunk carries "")
            received += piece
            upstream_done_at.append((received, list(proxy.upstream.stream_finished)))
    assert received == FAITHFUL
    first_text, finished_then = upstream_done_at[0]
    assert first_text == KEPT_1 and finished_then == [False]  # the first sentence, checked, long before the end
    complete_at = next(finished for text, finished in upstream_done_at if text == FAITHFUL)
    assert complete_at == [False]  # the whole answer before the model finished its supporting content


CONTRADICTED = "The Nitro hypervisor does not manage memory allocation for EC2 instances."  # the document says it does


@pytest.mark.parametrize(("api", "stream"), API_STREAM, ids=IDS)
async def test_contradicted_alone_as_the_trigger_strips_only_the_contradiction(start_proxy, api: str, stream: bool) -> None:
    answer = f"{KEPT_1} {INVENTED} {CONTRADICTED}"
    proxy = await start_proxy(script(answer), flags={"guard": {**ACTING, "verdicts": ["contradicted"]}})
    text, headers, _ = await ask(proxy, api, stream, "strip")
    assert text == f"{KEPT_1} {INVENTED}"  # the invented sentence is not found, not contradicted: left
    guard = await guard_record(proxy)
    assert (guard.outcome, guard.trigger, guard.removed_claims) == ("stripped", "contradicted", 1)
    if not stream:
        start = answer.index(CONTRADICTED)
        assert json.loads(headers["x-ragtap-contradicted-claims"]) == [[start, start + len(CONTRADICTED)]]
