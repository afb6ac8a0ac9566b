"""Issue 13 #2 and #11 over real HTTP with the openai SDK: injected streams whose upstream sends content after a
finish_reason chunk (some servers put finish_reason on every chunk), and Azure's prompt_filter_results event
(`choices: []`, first in the stream), which must reach the app."""

from __future__ import annotations

import json

from conftest import ANSWER, SUPPORTING, explicit, fixed, json_content, rag_messages

MODEL = "gpt-4o-mini"


def _events(raw: bytes) -> list[bytes]:
    return [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]


def rewrite_events(raw: bytes, rewrite) -> bytes:  # type: ignore[no-untyped-def]
    """The SSE stream with each JSON event replaced by the events `rewrite(event)` returns; [DONE] kept."""
    out = []
    for payload in _events(raw):
        out.extend([payload] if payload == b"[DONE]" else [json.dumps(e).encode() for e in rewrite(json.loads(payload))])
    return b"".join(b"data: " + p + b"\n\n" for p in out)


def finish_on_every_chunk(raw: bytes) -> bytes:
    def rewrite(event: dict) -> list[dict]:
        for choice in event.get("choices", []):
            choice["finish_reason"] = "stop"
        return [event]

    return rewrite_events(raw, rewrite)


def azure_filter_first(raw: bytes) -> bytes:
    prompt_filter = {"choices": [], "created": 0, "id": "", "model": "", "object": "",
                     "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}]}
    return b"data: " + json.dumps(prompt_filter).encode() + b"\n\n" + raw


async def test_content_after_a_finish_reason_chunk_is_still_the_answer(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    proxy.upstream.transform = finish_on_every_chunk
    text = ""
    async for chunk in await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
    assert text == ANSWER
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (ANSWER, SUPPORTING, None)


async def test_azure_prompt_filter_results_reach_the_app(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    proxy.upstream.transform = azure_filter_first
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True)
    filters, text = [], ""
    async for chunk in raw.parse():
        extra = chunk.model_extra or {}
        if "prompt_filter_results" in extra:
            filters.append(extra["prompt_filter_results"])
        for choice in chunk.choices:
            text += choice.delta.content or ""
    assert filters and filters[0][0]["content_filter_results"]["hate"]["filtered"] is False
    assert text == ANSWER


def content_parts_and_a_second_choice(raw: bytes) -> bytes:
    """Every content delta as a list of content parts, and an event for a choice with index 1 after each one."""
    def rewrite(event: dict) -> list[dict]:
        for choice in event.get("choices", []):
            content = choice.get("delta", {}).get("content")
            if isinstance(content, str):
                choice["delta"]["content"] = [{"type": "text", "text": content}]
                return [event, {**event, "choices": [{"index": 1, "delta": {"content": "OTHER CHOICE "}, "finish_reason": None}]}]
        return [event]

    return rewrite_events(raw, rewrite)


async def test_content_parts_and_other_choices_do_not_garble_choice_0(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    proxy.upstream.transform = content_parts_and_a_second_choice
    by_index: dict[int, str] = {}
    async for chunk in await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True):
        for choice in chunk.choices:
            content = choice.delta.content
            by_index[choice.index] = by_index.get(choice.index, "") + (content if isinstance(content, str) else "")
    assert by_index[0] == ANSWER
    assert by_index[1].startswith("OTHER CHOICE")  # the other choice's events reach the app as sent
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting) == (ANSWER, SUPPORTING)


async def _gaps_and_comments(proxy, timeout: float = 20.0) -> tuple[list[float], bytes]:  # type: ignore[no-untyped-def]
    """Read the app's raw stream through ragtap; the gaps between arrivals, and the raw bytes."""
    import time

    import aiohttp

    body = {"model": MODEL, "messages": rag_messages(), "stream": True, **explicit()}
    gaps, raw, last = [], b"", time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async with session.post(proxy.server.base_url + "/chat/completions", json=body) as response:
            async for chunk in response.content.iter_any():
                now = time.monotonic()
                gaps.append(now - last)
                last, raw = now, raw + chunk
    return gaps, raw


async def test_keep_alives_flow_while_the_model_writes_its_supporting_content(start_proxy) -> None:
    """Issue 13 #5: support first, written slowly: the app saw nothing for seconds (its read timeout fired)."""
    from ragtap.testing.upstream import ScriptedReply

    content = json.dumps({"supporting_content": "the manual says " * 20, "answer": ANSWER})
    # the SSE bytes written 300 at a time, 0.2 s apart (about 4 s in all)
    proxy = await start_proxy(fixed(ScriptedReply(content=content, piece_chars=20, cuts=range(300, 30_000, 300), chunk_delay_s=0.2)))
    gaps, raw = await _gaps_and_comments(proxy)
    assert b": ragtap keep-alive" in raw
    assert max(gaps[1:]) < 1.6  # keep-alives after 1 s of silence; the upstream itself writes every 0.2 s
    text = "".join(json.loads(p)["choices"][0]["delta"].get("content") or "" for p in _events(raw) if p != b"[DONE]" and json.loads(p)["choices"])
    assert text == ANSWER


async def test_nothing_follows_done_when_the_end_comes_after_a_pause(start_proxy) -> None:
    """A keep-alive comment came after `data: [DONE]` when the upstream's last write followed a pause of over 1 s
    (seen in tests/test_shutdown.py on a loaded machine): fails on the previous code."""
    from ragtap.testing.upstream import ScriptedReply, sse_bytes

    stream = sse_bytes("chatcmpl-scripted-1", MODEL, json_content(), "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
    cut = stream.index(b"data: [DONE]")  # the end, alone, 1.2 s after the rest (the stream's bytes are the same for any id)
    proxy = await start_proxy(fixed(ScriptedReply(content=json_content(), cuts=[cut], chunk_delay_s=1.2)))
    _, raw = await _gaps_and_comments(proxy)
    assert raw.endswith(b"data: [DONE]\n\n")


async def test_upstream_comments_are_forwarded(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    proxy.upstream.transform = lambda raw: b": PROCESSING\n\n" + raw
    _, raw = await _gaps_and_comments(proxy)
    assert b": PROCESSING" in raw


def test_an_sse_line_without_a_newline_is_bounded() -> None:
    """Issue 13 #9 (SSE part): an upstream that never ends a line cannot grow ragtap's memory; since issue 24 #2 the
    line is passed on (or skipped by a relay that forwards the bytes itself), not the end of the stream."""
    from ragtap.proxy.sse import SSEDecoder

    decoder = SSEDecoder(max_line=1000)
    assert decoder.feed(b"data: " + b"x" * 900) == []
    for _ in range(100):
        assert decoder.feed(b"x" * 200) == []
        assert decoder._held_size == 0  # nothing of it is kept
    assert decoder.unheld_events == [None]
    assert decoder.feed(b"\n\ndata: {}\n\n") == [b"{}"]  # the stream goes on after it


# --- issue 24 --------------------------------------------------------------------------------------------------


async def _raw_stream(proxy, **extra) -> bytes:  # type: ignore[no-untyped-def]
    async with proxy.client.chat.completions.with_streaming_response.create(
            model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True, **extra) as response:
        return await response.read()


async def test_nothing_follows_done_when_the_upstream_lingers_after_it(start_proxy) -> None:
    """Found by scripts/stress-tests.sh at load 12: an upstream whose last bytes came more than the keep-alive
    interval after its [DONE] made ragtap write a keep-alive comment after [DONE] (the test above has the pause
    before [DONE]).  Here the upstream sends a comment 1.3 s after [DONE]: neither it nor a keep-alive follows."""
    proxy = await start_proxy(fixed(json_content()))
    proxy.upstream.transform = lambda raw: raw + b": still here\n\n"
    proxy.upstream.cutter = lambda stream: [len(stream) - len(b": still here\n\n")]
    proxy.upstream.write_delay_s = 1.3
    raw = await _raw_stream(proxy)
    assert raw.endswith(b"data: [DONE]\n\n") and raw.count(b"[DONE]") == 1, raw[-200:]


async def test_a_chat_event_too_large_to_hold_is_relayed_unchanged_and_not_scored(start_proxy) -> None:
    """Issue 24 #2 on chat completions: an event over `replies.max_body_bytes` reaches the app as it came (it was
    the end of the stream before), the events around it are split as usual, and the reply is not scored."""
    limit = 1 << 20
    proxy = await start_proxy(fixed(json_content()), flags={"replies": {"max_body_bytes": limit}})
    big = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": MODEL, "choices": [], "usage": None,
           "system_fingerprint": "f" * (limit + 10)}
    big_bytes = b"data: " + json.dumps(big).encode() + b"\n\n"
    proxy.upstream.transform = lambda raw: raw.replace(b"data: [DONE]", big_bytes + b"data: [DONE]")
    raw = await _raw_stream(proxy, stream_options={"include_usage": True})
    assert big_bytes in raw and raw.endswith(b"data: [DONE]\n\n")
    text = "".join((json.loads(p)["choices"] or [{"delta": {}}])[0]["delta"].get("content") or "" for p in _events(raw) if p != b"[DONE]")
    assert text == ANSWER  # the answer, split, before it
    interaction, _ = await proxy.collector.assessment()
    assert interaction.answer == ANSWER and interaction.unscored_reason == "reply_too_large"
