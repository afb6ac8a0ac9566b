"""The SSE decoder of the proxy, at every byte cut: the HTTP tests cannot force the network to keep every write
apart, so this proves the decoder's half of "cuts anywhere give the same events" exhaustively."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.proxy.sse import DONE_EVENT, SSEDecoder, encode_event
from ragtap.testing.upstream import sse_bytes

CONTENT = json.dumps({"answer": "café ☕ 😀 — \"quoted\" \\ done", "supporting_content": "même 😀"}, ensure_ascii=False)
STREAM = sse_bytes("chatcmpl-1", "m", CONTENT, "stop", {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}, 3)


def decode(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    out: list[bytes] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.close()


EXPECTED = decode([STREAM])


def test_whole_stream() -> None:
    assert EXPECTED[-1] == b"[DONE]"
    events = [json.loads(p) for p in EXPECTED[:-1]]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == CONTENT
    assert events[-1]["choices"] == [] and events[-1]["usage"]["total_tokens"] == 3


def test_every_single_cut_position() -> None:
    for i in range(1, len(STREAM)):
        assert decode([STREAM[:i], STREAM[i:]]) == EXPECTED, i


def test_one_byte_at_a_time() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=30))
def test_random_cuts(cuts: list[int]) -> None:
    bounds = [0, *sorted(set(cuts)), len(STREAM)]
    assert decode([STREAM[a:b] for a, b in zip(bounds, bounds[1:])]) == EXPECTED


def test_crlf_comments_fields_and_multiline_data() -> None:
    raw = b": keep-alive\r\nevent: message\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nretry: 10\n\ndata:[DONE]\n\n"
    assert decode([raw]) == [b'{"a":\n1}', b"[DONE]"]


def test_close_flushes_an_unterminated_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x": 1}') == []
    assert decoder.close() == [b'{"x": 1}']
    assert decoder.close() == []


def test_encode() -> None:
    assert encode_event(b"{}") == b"data: {}\n\n"
    assert DONE_EVENT == b"data: [DONE]\n\n"
