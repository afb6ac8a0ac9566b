"""The SSE decoder of the proxy, at every byte cut: the HTTP tests cannot force the network to keep every write
apart, so this proves the decoder's half of "cuts anywhere give the same events" exhaustively."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.proxy.sse import DONE_EVENT, SSEDecoder, Unheld, encode_event
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


# --- events too large to hold (issue 24 #2) ---------------------------------------------------------------------

BIG = b"event: response.created\ndata: {\"type\": \"response.created\", \"instructions\": \"" + b"i" * 300 + b"\"}\n\n"
SMALL = b"event: response.in_progress\ndata: {\"type\": \"response.in_progress\"}\n\n"
TYPED = SMALL + BIG + SMALL + b": keep-alive\n\n" + BIG.replace(b"\n", b"\r\n") + SMALL


def decode_unheld(pieces: list[bytes], max_line: int = 200) -> tuple[list[bytes | Unheld], list[str | None]]:
    decoder = SSEDecoder(max_line, pass_unheld=True)
    out: list[bytes | Unheld] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.close(), decoder.unheld_events


def _merged(items: list[bytes | Unheld]) -> list[bytes | tuple[str | None, bytes]]:
    """Unheld pieces of one event joined (how they were cut depends on the reads, what they add up to does not)."""
    merged: list[bytes | tuple[str | None, bytes]] = []
    current = b""
    for item in items:
        if isinstance(item, Unheld):
            assert item.first == (current == b"")
            current += item.data
            if item.last:
                merged.append((item.event_type, current))
                current = b""
        else:
            assert current == b"", "a payload inside an unheld event"
            merged.append(item)
    assert current == b""
    return merged


UNHELD_EXPECTED = _merged(decode_unheld([TYPED])[0])


def test_an_event_too_large_to_hold_is_handed_on_as_it_came() -> None:
    small = b'{"type": "response.in_progress"}'
    # (and the comment in its place: a relay forwards it where it came)
    assert UNHELD_EXPECTED == [small, ("response.created", BIG), small, b": keep-alive\n\n", ("response.created", BIG.replace(b"\n", b"\r\n")), small]
    assert decode_unheld([TYPED])[1] == ["response.created", "response.created"]


def test_an_event_too_large_to_hold_is_the_same_at_every_cut() -> None:
    for i in range(1, len(TYPED)):
        assert _merged(decode_unheld([TYPED[:i], TYPED[i:]])[0]) == UNHELD_EXPECTED, i
    assert _merged(decode_unheld([TYPED[i : i + 7] for i in range(0, len(TYPED), 7)])[0]) == UNHELD_EXPECTED


def test_without_pass_unheld_the_event_is_skipped_and_the_rest_decoded() -> None:
    decoder = SSEDecoder(200)
    out = decoder.feed(TYPED) + decoder.close()
    assert out == [b'{"type": "response.in_progress"}'] * 3 and decoder.unheld_events == ["response.created"] * 2
    assert decoder.comments == [b": keep-alive"]


def test_a_long_line_is_joined_once() -> None:
    """An incomplete line is kept as its chunks: feeding a 4 MB line in 16 kB reads stays linear."""
    line = b"data: " + b"x" * (4 << 20) + b"\n\n"
    decoder = SSEDecoder(8 << 20)
    out = []
    for i in range(0, len(line), 16384):
        out += decoder.feed(line[i : i + 16384])
    assert out == [b"x" * (4 << 20)]
