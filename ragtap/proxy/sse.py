"""Server-sent events, incrementally: bytes from the network in, complete `data:` payloads out.

The upstream may cut its stream anywhere (inside a `data:` line, inside a multi-byte UTF-8 character), so
decoding waits for complete lines.  Each feed only scans the bytes that arrived since the last one.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# A line longer than this is not an SSE stream ragtap can follow (a chat chunk is a few hundred bytes): bounded,
# so an upstream that never sends a newline cannot grow ragtap's memory.
MAX_LINE_BYTES = 4 * 1024 * 1024


class SSELineTooLong(ValueError):
    """The upstream sent more than MAX_LINE_BYTES without a newline."""


class SSEDecoder:
    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pending = b""  # an incomplete line carried over to the next chunk
        self._data: list[bytes] = []  # the data lines of the event being read
        self._max_line = max_line
        # Comment lines (": PROCESSING", keep-alives) seen since the caller last took them: a proxy that rewrites
        # the events must still pass these on, or an app's read timeout fires only through ragtap.
        self.comments: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data payloads of the events completed by `chunk` (raw bytes, e.g. b'{...}' or b'[DONE]')."""
        if self._pending:
            chunk = self._pending + chunk
        lines = chunk.split(b"\n")
        self._pending = lines.pop()  # the part after the last newline is not a complete line yet
        if len(self._pending) > self._max_line:
            raise SSELineTooLong(f"an SSE line longer than {self._max_line} bytes")
        events: list[bytes] = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:  # a blank line ends the event
                if self._data:
                    events.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b":"):
                self.comments.append(line)
            # the event/id/retry fields carry nothing for chat completions
        return events

    def close(self) -> list[bytes]:
        """Flush an event the upstream did not terminate with a blank line before closing."""
        leftover = self.feed(b"\n\n") if (self._pending or self._data) else []
        self._pending, self._data = b"", []
        return leftover


def take_comments(decoder: SSEDecoder) -> bytes:
    """The comment lines seen so far, as SSE bytes to forward (each ends its own comment block)."""
    if not decoder.comments:
        return b""
    data = b"".join(line + b"\n\n" for line in decoder.comments)
    decoder.comments.clear()
    return data


def encode_event(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


DONE_EVENT = encode_event(b"[DONE]")


def encode_typed(event: dict[str, Any]) -> bytes:
    """One typed event as the Responses and Messages APIs write it: its type on an `event:` line, then the JSON."""
    try:
        data = orjson.dumps(event)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (254 levels; it reads 1024)
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    kind = event.get("type")
    if isinstance(kind, str) and "\n" not in kind and "\r" not in kind:
        return b"event: " + kind.encode() + b"\n" + encode_event(data)
    return encode_event(data)
