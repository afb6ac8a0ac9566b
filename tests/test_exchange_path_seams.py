"""The exchange path's two seams (issue 25, for issue 22's guard), over real HTTP with the official openai SDK.

(a) A whole reply: a step awaits the assessment and replaces the answer; the app gets the replacement where its
    API shape carries the text, with the upstream's ids, usage and finish reason; the interaction is scored once,
    on the model's own answer.
(b) A stream: a gate holds every piece of answer text back and releases a replacement when the answer is
    complete; the app's stream carries only the replacement, before the shape's closing events (chat: the
    finish_reason chunk; Responses: `output_text.done` and the final response, which carry it too).
Neither seam existed before (the steps could not be given to the app: these tests fail on the previous code).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragtap.proxy.exchange_path import Exchange, ExchangeSteps, WholeReply, assess_now, assess_split
from ragtap.split.stream import StreamResult

from ragtap.testing.upstream import ScriptedReply

from conftest import ANSWER, SUPPORTING, explicit, fixed, json_content, rag_messages, sse_events

MODEL = "gpt-4o-mini"


class Badge:
    """Seam (a): the verdict before the answer."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_whole_reply(self, exchange: Exchange, reply: WholeReply) -> None:
        assessment = await assess_now(exchange, 30.0)
        again = await assess_now(exchange, 30.0)  # scored once: the same assessment
        assert assessment is not None and again is assessment
        self.seen.append(reply.answer)
        reply.replace_answer(f"[{assessment.verdict.value}] {reply.answer}")


class Hold:
    """Seam (b): holds everything, then releases the answer in angle brackets."""

    def __init__(self) -> None:
        self.fed: list[str] = []
        self.results: list[StreamResult] = []

    def feed(self, text: str) -> str:
        self.fed.append(text)
        return ""

    async def release(self, result: StreamResult) -> str:
        self.results.append(result)
        return f"<{result.answer}>"


class VerdictGate:
    """Seam (b) as a guard would use it: holds the answer, scores the split at the release, badges it."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange

    def feed(self, text: str) -> str:
        return ""

    async def release(self, result: StreamResult) -> str:
        assessment = await assess_split(self.exchange, result, 30.0)
        assert assessment is not None
        return f"[{assessment.verdict.value}] {result.answer}"


def _steps(badge: Badge | None = None, holds: list[Hold] | None = None) -> ExchangeSteps:
    def open_hold(exchange: Exchange) -> Hold | None:
        if holds is None or exchange.context is None:
            return None
        holds.append(Hold())
        return holds[-1]

    return ExchangeSteps(whole_reply=(badge,) if badge is not None else (), stream_gates=(open_hold,))


async def test_a_whole_chat_reply_step_awaits_the_assessment_and_replaces_the_answer(start_proxy) -> None:
    badge = Badge()
    proxy = await start_proxy(fixed(json_content()), steps=_steps(badge), client_timeout=60.0)
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    upstream = json.loads(proxy.upstream.sent[-1])
    assert badge.seen == [ANSWER]
    interaction, assessment = await proxy.collector.assessment()
    assert completion.choices[0].message.content == f"[{assessment.verdict.value}] {ANSWER}"
    assert (completion.id, completion.choices[0].finish_reason) == (upstream["id"], "stop")
    assert completion.usage.completion_tokens == upstream["usage"]["completion_tokens"]
    assert (interaction.answer, interaction.supporting) == (ANSWER, SUPPORTING)  # the model's answer is what is scored
    record = await proxy.collector.exchange()
    assert record.output_text == completion.choices[0].message.content  # what the app received
    assert len(proxy.collector.scored) == 1


async def test_a_whole_responses_reply_step_replaces_the_text_everywhere_it_is_carried(start_proxy) -> None:
    badge = Badge()
    proxy = await start_proxy(fixed(json_content()), steps=_steps(badge), client_timeout=60.0)
    response = await proxy.client.responses.create(model=MODEL, input="Say it.", extra_body=explicit())
    _, assessment = await proxy.collector.assessment()
    expected = f"[{assessment.verdict.value}] {ANSWER}"
    assert response.output_text == expected and response.output[0].content[0].text == expected
    assert response.id == json.loads(proxy.upstream.sent[-1])["id"]


async def test_a_chat_stream_gate_holds_text_and_releases_it_before_the_finish_chunk(start_proxy) -> None:
    holds: list[Hold] = []
    proxy = await start_proxy(fixed(json_content()), steps=_steps(holds=holds), client_timeout=60.0)
    async with proxy.client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True
    ) as response:
        events = sse_events(await response.read())
    texts = [e["choices"][0]["delta"].get("content") for e in events if e["choices"] and e["choices"][0]["delta"].get("content")]
    assert texts == [f"<{ANSWER}>"]  # nothing before the release
    finishes = [i for i, e in enumerate(events) if e["choices"] and e["choices"][0].get("finish_reason")]
    text_at = next(i for i, e in enumerate(events) if e["choices"] and e["choices"][0]["delta"].get("content"))
    assert len(finishes) == 1 and finishes[0] > text_at
    [hold] = holds
    assert "".join(hold.fed) == ANSWER and hold.results[0].supporting == SUPPORTING
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER


async def test_a_responses_stream_gate_release_is_what_the_done_events_carry(start_proxy) -> None:
    holds: list[Hold] = []
    proxy = await start_proxy(fixed(json_content()), steps=_steps(holds=holds), client_timeout=60.0)
    async with proxy.client.responses.stream(model=MODEL, input="Say it.", extra_body=explicit()) as stream:
        deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert deltas == [f"<{ANSWER}>"]
    assert final.output_text == f"<{ANSWER}>"
    assert "".join(holds[0].fed) == ANSWER


@pytest.mark.parametrize("stream", [False, True])
async def test_without_steps_nothing_is_held_or_replaced(start_proxy, stream: bool) -> None:
    proxy = await start_proxy(fixed(json_content()))
    kwargs: dict[str, Any] = dict(model=MODEL, messages=rag_messages(), extra_body=explicit())
    if stream:
        text = ""
        async for chunk in await proxy.client.chat.completions.create(stream=True, **kwargs):
            text += "".join(c.delta.content or "" for c in chunk.choices)
    else:
        text = (await proxy.client.chat.completions.create(**kwargs)).choices[0].message.content or ""
    assert text == ANSWER


async def test_a_gate_scores_the_stream_at_its_release_once(start_proxy) -> None:
    steps = ExchangeSteps(stream_gates=(lambda exchange: VerdictGate(exchange) if exchange.record.stream else None,))
    proxy = await start_proxy(lambda body: ScriptedReply(json_content() if "stream" in body else json_content("Plain one.")), steps=steps,
                              client_timeout=60.0)
    text = ""
    async for chunk in await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True):
        text += "".join(c.delta.content or "" for c in chunk.choices)
    interaction, assessment = await proxy.collector.assessment()
    assert text == f"[{assessment.verdict.value}] {ANSWER}" and interaction.answer == ANSWER
    await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    second, _ = await proxy.collector.assessment(2)  # (the queue is first in, first out)
    assert second.answer == "Plain one."  # not the stream scored a second time
