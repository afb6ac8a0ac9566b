"""Hostile replies on the Anthropic Messages API (issue 25): whatever Claude writes after ragtap's instruction, the
app never gets a worse answer than without ragtap.  Over real HTTP (official anthropic SDK -> ragtap -> scripted
upstream), streamed and not, and the split cut at every byte boundary of the SSE stream.

Claude has no JSON mode: a preamble ("Here is the JSON:"), a code fence and text after the object are normal, and
the app must get the plain answer (with the text after it, as the stream forwards it).  A reply that is not our
object reaches the app as Claude wrote it; a cut or failing stream gives the answer so far, then the failure as
it came (no made-up end).
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtap.proxy.sse import SSEDecoder
from ragtap.split.messages_stream import MessagesStreamSplitter
from ragtap.testing.messages_wire import MessagesWire
from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected

from conftest import ANSWER, SUPPORTING, explicit, sse_events
from test_proxy_messages import MODEL, ask, via

JSON = json_reply(ANSWER, SUPPORTING)
TAIL = "Let me know if you need anything else."
CUT = JSON[: JSON.index("APIs")]  # cut inside the answer
ANSWER_SO_FAR = ANSWER[: ANSWER.index("APIs")]

HOSTILE = [
    # (id, what Claude writes when asked for JSON, what the app gets whole, what it gets streamed, unscored reason)
    ("bare_json", JSON, ANSWER, ANSWER, None),
    ("here_is_the_json", "Here is the JSON:\n" + JSON, ANSWER, ANSWER, None),
    ("fenced", "```json\n" + JSON + "\n```", ANSWER, ANSWER, None),
    ("lead_in_fence_and_tail", "Here is my answer in the requested format:\n\n```json\n" + JSON + "\n```\n\n" + TAIL,
     ANSWER + "\n\n" + TAIL, ANSWER + "\n\n" + TAIL, "text_after_json"),
    ("prose_only", "The APIs stay the same with Nitro.", "The APIs stay the same with Nitro.", "The APIs stay the same with Nitro.", "not_json"),
    ("long_prose_then_json", "Well. " * 40 + JSON, "Well. " * 40 + JSON, "Well. " * 40 + JSON, "not_json"),
    ("nested_answer", '{"result": {"answer": "Lyon"}}', '{"result": {"answer": "Lyon"}}', '{"result": {"answer": "Lyon"}}', "no_answer"),
    ("null_answer", '{"answer": null, "supporting_content": "x"}', '{"answer": null, "supporting_content": "x"}',
     '{"answer": null, "supporting_content": "x"}', "answer_not_string"),
    ("max_tokens_inside_the_answer", CUT, ANSWER_SO_FAR, ANSWER_SO_FAR, "truncated"),
    ("max_tokens_before_the_answer", '{"answ', '{"answ', '{"answ', "truncated"),
]


def hostile(content: str, **reply: Any):  # type: ignore[no-untyped-def]
    finish = "length" if content in (CUT, '{"answ') else "stop"
    return lambda body: ScriptedReply(content if was_injected(body) else ANSWER, finish_reason=finish, **reply)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("content", "whole", "streamed", "reason"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
async def test_the_app_never_gets_a_worse_answer(start_proxy, content: str, whole: str, streamed: str, reason: str | None, stream: bool) -> None:
    proxy = await start_proxy(hostile(content, piece_chars=3))
    async with via(proxy) as sdk:
        if stream:
            async with sdk.messages.stream(**ask()) as events:
                text = "".join([t async for t in events.text_stream])
                final = await events.get_final_message()
            assert final.content[0].text == text
        else:
            message = await sdk.messages.create(**ask())
            text = message.content[0].text
            final = message
    assert text == (streamed if stream else whole)
    assert final.stop_reason == ("max_tokens" if content in (CUT, '{"answ') else "end_turn")
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.unscored_reason) == (text, reason)
    if reason is None:
        assert interaction.supporting == SUPPORTING


async def test_an_overloaded_error_event_is_relayed_after_the_answer_so_far(start_proxy) -> None:
    proxy = await start_proxy(hostile(JSON, piece_chars=4, error_after_deltas=12))
    async with via(proxy) as sdk:
        texts: list[str] = []
        with pytest.raises(anthropic.APIStatusError) as raised:
            async with sdk.messages.stream(**ask()) as events:
                async for text in events.text_stream:
                    texts.append(text)
        raw = await _raw_stream(sdk)
    assert raised.value.body["error"]["type"] == "overloaded_error"
    assert ANSWER.startswith("".join(texts)) and texts  # the answer so far, never JSON
    events = sse_events(raw)
    assert events[-1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert "message_stop" not in [e["type"] for e in events]
    exchange = await proxy.collector.exchange()
    assert (exchange.outcome, exchange.error_type) == ("upstream_error", "overloaded_error")


async def _raw_stream(sdk: anthropic.AsyncAnthropic) -> bytes:
    async with sdk.messages.with_streaming_response.create(**ask(), stream=True) as response:
        return await response.read()


async def test_a_cut_stream_gives_the_answer_so_far_and_no_made_up_end(start_proxy) -> None:
    wire_bytes = MessagesWire(ask(system="supporting_content"), ScriptedReply(JSON, piece_chars=4), 1).sse_bytes()
    cut_at = [m.start() for m in re.finditer(b"text_delta", wire_bytes)][10]  # inside the answer's 11th delta event
    proxy = await start_proxy(hostile(JSON, piece_chars=4, abort_after_bytes=cut_at))
    async with via(proxy) as sdk:
        raw = await _raw_stream(sdk)
    events = sse_events(raw)
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text and ANSWER.startswith(text)
    assert [e["type"] for e in events][-1] == "content_block_delta"  # no content_block_stop / message_stop invented
    interaction, _ = await proxy.collector.assessment()
    assert interaction.unscored_reason in ("truncated", "upstream_broke_off")


# --- the split, cut at every byte boundary --------------------------------------------------------------------------

TRICKY = ScriptedReply("Here is the JSON:\n```json\n" + json_reply("Ünïcödé \"quotes\" \\ and\nnewlines ✓ 𝄞", SUPPORTING) + "\n```", piece_chars=3)


def _split(chunks: list[bytes]) -> tuple[str, list[dict[str, Any]]]:
    decoder, splitter, out = SSEDecoder(), MessagesStreamSplitter(), []
    for chunk in chunks:
        for payload in decoder.feed(chunk):
            out.extend(splitter.feed(json.loads(payload)))
    for payload in decoder.close():
        out.extend(splitter.feed(json.loads(payload)))
    out.extend(splitter.close())
    text = "".join(e["delta"]["text"] for e in out if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")
    return text, [e for e in out if e["type"] != "content_block_delta"]


def test_the_split_is_the_same_wherever_the_stream_is_cut() -> None:
    stream = MessagesWire({"model": MODEL}, TRICKY, 1).sse_bytes()
    whole_text, whole_events = _split([stream])
    assert whole_text == "Ünïcödé \"quotes\" \\ and\nnewlines ✓ 𝄞"
    assert [e["type"] for e in whole_events] == ["message_start", "content_block_start", "ping", "content_block_stop", "message_delta", "message_stop"]
    for cut in range(1, len(stream)):  # every byte boundary, inside `event:` lines, JSON, escapes and UTF-8
        assert _split([stream[:cut], stream[cut:]]) == (whole_text, whole_events), cut


_STARTED: list[Any] = []  # one ragtap and upstream for every example of the property below


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cuts=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12))
async def test_the_app_gets_the_same_answer_over_http_wherever_the_upstream_cuts(start_proxy, cuts: list[float]) -> None:
    if not _STARTED or _STARTED[0][0] is not start_proxy:
        _STARTED[:] = [(start_proxy, await start_proxy(lambda body: TRICKY if was_injected(body) else ScriptedReply("plain")))]
    proxy = _STARTED[0][1]
    proxy.upstream.cutter = lambda stream: [int(f * len(stream)) for f in cuts]
    async with via(proxy) as sdk:
        async with sdk.messages.stream(**ask(), extra_body=explicit()) as events:
            text = "".join([t async for t in events.text_stream])
            final = await events.get_final_message()
    assert text == final.content[0].text == "Ünïcödé \"quotes\" \\ and\nnewlines ✓ 𝄞"
