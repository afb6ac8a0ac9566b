"""Issue 7, bad input from the client, over real HTTP: one test per row of the table in docs/reliability.md.

Each bad request either gets a clear OpenAI-style error from ragtap (when ragtap itself cannot take it: too
large, too deeply nested to rewrite) or reaches the upstream unchanged, so the app gets the upstream's own
verdict (here `FaultUpstream`, which answers unreadable chat requests with 400 as api.openai.com does).
Never a 500 from ragtap, never a hang.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from test_reliability_faults import MODEL, Rig, chat, request, rig_context

from conftest import QUESTION, explicit, json_content, rag_messages


@pytest.fixture
async def rig(embedder):  # type: ignore[no-untyped-def]
    async with rig_context(embedder, flags={"server": {"max_body_bytes": 20_000}}) as r:
        yield r


async def assert_forwarded_unchanged(rig: Rig, raw: bytes, path: str = "/v1/chat/completions", method: str = "POST",
                                     content_type: str = "application/json") -> None:
    """The upstream received exactly `raw`, and the app got exactly what the upstream answers to it directly.
    (Paths map onto the upstream's base URL: `/v1/x` -> base + `/x`, any other `/y` -> base + `/y`.)"""
    headers = {"Content-Type": content_type}
    upstream_path = path if path.startswith("/v1/") else "/v1" + path
    before = len(rig.upstream.requests)
    via = await rig.call(path, raw=raw, method=method, headers=headers)
    assert len(rig.upstream.requests) == before + 1, "the upstream was not called"
    received = rig.upstream.requests[-1]
    assert received.body == raw and received.method == method and received.path == upstream_path
    direct = await rig.call(upstream_path, raw=raw, method=method, headers=headers, base=f"http://127.0.0.1:{rig.upstream.port}")
    assert via.error is None and (via.status, via.body) == (direct.status, direct.body), (via.status, via.body[:200])
    assert via.status != 500


def assert_ragtap_error(result: Any, status: int, code: str) -> None:
    assert result.error is None and result.status == status, (result.status, result.body[:200])
    error = result.json()["error"]
    assert error["code"] == code and error["type"] == "invalid_request_error" and error["message"].startswith("ragtap:")


# Row 1-4, 7-9, 14, 20: not something ragtap can (or should) read -> the upstream decides, bytes unchanged.
UNREADABLE = {
    "invalid_json": b'{"model": "gpt-4o-mini", "messages": [',
    "json_array": b'[{"role": "user", "content": "hi"}]',
    "json_string": b'"hello"',
    "json_number": b"42",
    "json_null": b"null",
    "empty_body": b"",
    "invalid_utf8": b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "caf\xe9 \xff\xfe"}]}',
    "lone_surrogate": b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "\\ud800"}]}',
    "nan_literal": b'{"model": "gpt-4o-mini", "temperature": NaN, "messages": [{"role": "user", "content": "hi"}]}',
    "too_deep_for_orjson": b'{"model": "gpt-4o-mini", "messages": [], "x": ' + b"[" * 1100 + b"]" * 1100 + b"}",
    "missing_messages": b'{"model": "gpt-4o-mini"}',
    "messages_not_a_list": b'{"model": "gpt-4o-mini", "messages": "What is RAG?"}',
    "wrong_types": json.dumps({"model": 5, "messages": [1, "two", {"role": 3, "content": {"x": 1}}], "stream": "yes",
                               "temperature": "hot", "n": "many", "tools": "none"}).encode(),
}


@pytest.mark.parametrize("name", list(UNREADABLE))
async def test_unreadable_or_non_rag_bodies_reach_the_upstream_unchanged(rig, name) -> None:
    await assert_forwarded_unchanged(rig, UNREADABLE[name])


async def test_non_json_content_type_is_forwarded_unchanged(rig) -> None:
    await assert_forwarded_unchanged(rig, b"model=gpt-4o-mini&messages=hi", content_type="application/x-www-form-urlencoded")


# Row 5: the `ragtap` field is valid but there is no message list to inject into.
@pytest.mark.parametrize("messages", [None, "What is RAG?", 7, {"role": "user"}], ids=["missing", "string", "number", "object"])
async def test_valid_ragtap_field_without_a_message_list_is_stripped_and_forwarded(rig, messages) -> None:
    body: dict[str, Any] = {"model": MODEL, **explicit()}
    if messages is not None:
        body["messages"] = messages
    result = await rig.call("/v1/chat/completions", body)
    assert result.status == 400  # the upstream's verdict on the app's request, not a ragtap 500
    forwarded = json.loads(rig.upstream.requests[-1].body)
    assert forwarded == {k: v for k, v in body.items() if k != "ragtap"}


@pytest.mark.parametrize("options", [1, "yes", [True], None, {}])
async def test_rag_stream_with_stream_options_that_is_not_an_object(rig, options) -> None:
    """Row 8b (found by the fuzzer): ragtap adds `include_usage` to an object only; anything else goes to the upstream
    as the app sent it (was: a ragtap 500)."""
    body = {**chat("rag", stream=True), "stream_options": options}
    result = await rig.call("/v1/chat/completions", body)
    assert result.status == 200 and result.body.endswith(b"data: [DONE]\n\n")
    forwarded = json.loads(rig.upstream.requests[-1].body)
    assert forwarded["stream_options"] == (options if options not in (None, {}) else {"include_usage": True})


# Row 6: a `ragtap` field of the wrong shape is stripped; recognition falls back to the implicit rules.
BAD_FIELDS = [
    "yes", ["question", "documents"], 1, None,
    {"question": 1, "documents": ["d"]}, {"question": "q", "documents": "one doc"}, {"question": "q", "documents": [1, 2]},
    {"question": "q"}, {"enabled": "no"}, {"documents": [{"text": 5}], "question": "q"},
]


@pytest.mark.parametrize("field", BAD_FIELDS, ids=[f"bad{i}" for i in range(len(BAD_FIELDS))])
async def test_ragtap_field_of_the_wrong_shape_is_stripped_and_the_request_answered(rig, field) -> None:
    plain = {"model": MODEL, "messages": [{"role": "user", "content": "Hello there"}]}
    result = await rig.call("/v1/chat/completions", {**plain, "ragtap": field})
    assert result.status == 200 and result.json()["choices"][0]["message"]["content"] == "The answer."
    assert json.loads(rig.upstream.requests[-1].body) == plain  # no `ragtap`, nothing injected
    # ...and with an implicit RAG prompt the implicit rules still apply.
    rag = {"model": MODEL, "messages": rag_messages()}
    result = await rig.call("/v1/chat/completions", {**rag, "ragtap": field})
    assert result.status == 200
    forwarded = json.loads(rig.upstream.requests[-1].body)
    assert "ragtap" not in forwarded


# Row 10-11: deeply nested JSON inside a request ragtap rewrites.
def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("depth", [300, 900])
async def test_deep_nesting_orjson_cannot_write_is_still_injected(rig, depth) -> None:
    """orjson reads 1024 levels but writes only 254: ragtap falls back to the json module to write the request."""
    body = {**chat("rag"), "metadata": _nested(depth)}
    result = await rig.call("/v1/chat/completions", raw=json.dumps(body).encode())
    assert result.status == 200, result.body[:200]
    assert result.json()["choices"][0]["message"]["content"] == json.loads(json_content())["answer"]
    forwarded = json.loads(rig.upstream.requests[-1].body)
    assert forwarded["metadata"] == body["metadata"] and "ragtap" not in forwarded


async def test_nesting_too_deep_to_rewrite_gets_an_openai_style_400(rig) -> None:
    raw = json.dumps({**chat("rag")})[:-1].encode() + b', "metadata": ' + b"[" * 1015 + b"]" * 1015 + b"}"
    before = len(rig.upstream.requests)
    result = await rig.call("/v1/chat/completions", raw=raw)
    assert_ragtap_error(result, 400, "request_too_deep")
    assert len(rig.upstream.requests) == before


async def test_integers_beyond_64_bits_in_a_rewritten_request(rig) -> None:
    """orjson reads integers beyond 64 bits as floats; a body with such an integer is read by the json module, so a
    request ragtap rewrites carries it exactly (issue 24; it went out as a float before).  Requests ragtap does not
    rewrite keep their bytes."""
    big = 123456789012345678901234567890
    rag = {**chat("rag"), "seed": big}
    assert (await rig.call("/v1/chat/completions", raw=json.dumps(rag).encode())).status == 200
    forwarded = rig.upstream.requests[-1].body
    assert json.loads(forwarded)["seed"] == big and str(big).encode() in forwarded
    await assert_forwarded_unchanged(rig, json.dumps({**chat("plain"), "seed": big}).encode())


# Row 12-13: bodies over server.max_body_bytes, with and without Content-Length, chat and passthrough routes.
async def _chunks(total: int, size: int = 4096):  # type: ignore[no-untyped-def]
    for start in range(0, total, size):
        yield b"x" * min(size, total - start)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/v1/embeddings", "/v1/files", "/v1/unknown"])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_body_over_the_limit_gets_an_openai_style_413(rig, path, framing) -> None:
    before = len(rig.upstream.requests)
    size = 200_000
    if framing == "content-length":
        result = await rig.call(path, raw=b"x" * size)
    else:  # no Content-Length: the limit must hold while reading
        result = await request(rig.session, rig.url + path, raw=_chunks(size))  # type: ignore[arg-type]
    assert_ragtap_error(result, 413, "request_too_large")
    assert "20000 bytes" in result.json()["error"]["message"]
    assert len(rig.upstream.requests) == before
    # A body just under the limit goes through.
    body = {**chat("plain"), "pad": "y" * 15_000}
    assert (await rig.call("/v1/chat/completions", body)).status == 200


# Row 15-16: routes ragtap does not own.
@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/files"), ("POST", "/v2/anything"), ("GET", "/"), ("DELETE", "/v1/models/x"),
                                              ("GET", "/v1/chat/completions"), ("PUT", "/v1/chat/completions")])
async def test_unknown_routes_and_methods_are_passed_through(rig, method, path) -> None:
    await assert_forwarded_unchanged(rig, b"" if method in ("GET", "DELETE") else b'{"a": 1}', path=path, method=method)


# Row 17: not HTTP at all -- aiohttp's parser answers before any route; ragtap keeps serving.
@pytest.mark.parametrize("garbage", [
    b"GARBAGE\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
], ids=["request_line", "header_too_long", "bad_chunk", "bad_length"])
async def test_malformed_http_gets_400_and_ragtap_keeps_serving(rig, garbage) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", rig.server.port)
    try:
        writer.write(garbage)
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(), 5)  # the connection is closed after the answer
    finally:
        writer.close()
    assert reply.startswith(b"HTTP/1.0 400 ") or reply.startswith(b"HTTP/1.1 400 ")
    assert (await rig.call("/v1/chat/completions", chat("rag"))).status == 200


async def test_question_in_the_explicit_field_is_used_even_with_odd_messages(rig) -> None:
    """A valid explicit field with a message list of odd items: injected, the upstream decides about the items."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}, 5], **explicit()}
    result = await rig.call("/v1/chat/completions", body)
    assert result.status == 200
    assert json.loads(rig.upstream.requests[-1].body)["messages"][1] == 5
