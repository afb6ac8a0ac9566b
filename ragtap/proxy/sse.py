"""Server-sent events, incrementally: bytes from the network in, complete `data:` payloads out.

The upstream may cut its stream anywhere (inside a `data:` line, inside a multi-byte UTF-8 character), so
decoding waits for complete lines.  Each feed scans only the bytes that arrived since the last one, and an
incomplete line is kept as the chunks it came in, joined once when its newline arrives (joining it at every
chunk copied a 4 MB line ~250 times).

A line longer than `max_line` is an event ragtap does not hold (issue 24 #2: every Responses event echoes the
request's `instructions`; a hosted tool can send megabytes).  It is never dropped from what the app receives:
with `pass_unheld` the decoder hands its bytes on as they come (`Unheld` pieces, from its `event:` line to the
blank line that ends it) for the relay to forward unchanged; without, it skips it (for relays that forward the
upstream's bytes themselves and only read a copy).  Either way ragtap keeps at most `max_line` bytes of it, and
`unheld_events` records its type.  The event before and after it are decoded as usual.  A relay that passes
unheld events gets the upstream's comment lines in order too (`Comment`), so that it can forward them where they
came (and not after the stream's end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragtap.proxy.json_bodies import dumps

MAX_LINE_BYTES = 4 * 1024 * 1024  # the default; relays pass `replies.max_body_bytes`


class Comment(bytes):
    """A comment line (": PROCESSING", a keep-alive) as it goes to the app (its blank line included), in stream
    order among the payloads (`pass_unheld`)."""


@dataclass(frozen=True, slots=True)
class Unheld:
    """A piece of an event too large to hold, to forward as it came (`pass_unheld`)."""

    data: bytes
    event_type: str | None  # from the event's `event:` line (typed streams: Responses, Messages)
    first: bool  # the event's first piece (its `event:` line and any data lines before the long one)
    last: bool  # the event ends with this piece


class SSEDecoder:
    def __init__(self, max_line: int = MAX_LINE_BYTES, *, pass_unheld: bool = False) -> None:
        self._held: list[bytes] = []  # an incomplete line, as the chunks it came in
        self._held_size = 0
        # The lines of the event being read, as they came (its data lines and its `event:`, `id:`, ... fields): the
        # payload is taken from them when the event ends, and they start an unheld event's first piece.
        self._lines: list[bytes] = []
        self._has_data = False
        self._event_type: str | None = None
        self._max_line = max_line
        self._pass_unheld = pass_unheld
        self._passing = False  # inside an event too large to hold
        self._pass_in_line = False  # ... inside one of its lines (else at the start of a line)
        self._pass_cr = False  # ... a "\r" at the start of a line was passed: a "\n" next ends the event
        self._pass_first = False
        self._pass_type: str | None = None
        self.unheld_events: list[str | None] = []  # the types of the events not held, in order
        # Comment lines (": PROCESSING", keep-alives) seen since the caller last took them: a proxy that rewrites
        # the events must still pass these on, or an app's read timeout fires only through ragtap.
        self.comments: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes | Unheld]:
        """The data payloads of the events completed by `chunk` (raw bytes, e.g. b'{...}' or b'[DONE]'), and
        with `pass_unheld` the pieces of events too large to hold and the comments, in stream order."""
        out: list[bytes | Unheld] = []
        if self._held:
            if b"\n" not in chunk:
                self._hold(chunk, out)
                return out
            chunk = b"".join(self._held) + chunk
            self._held, self._held_size = [], 0
        if self._passing:
            pos = 0
            while self._passing and pos < len(chunk):
                pos = self._pass_on(chunk, pos, out)
            if pos >= len(chunk):
                return out
            chunk = chunk[pos:]
        lines = chunk.split(b"\n")
        last = lines.pop()  # the part after the last newline is not a complete line yet
        if lines and max(map(len, lines)) > self._max_line:  # a whole line too large, in one read: the same as cut
            return self._feed_long_line(lines, last, out)
        event_lines, has_data = self._lines, self._has_data  # (locals in the loop: it runs for every line)
        for raw in lines:
            if raw.startswith(b"data:"):  # the common lines first: a data line, and the blank line after it
                event_lines.append(raw)
                has_data = True
            elif not raw and has_data and len(event_lines) == 1:
                value = event_lines[0][5:]
                if value.endswith(b"\r"):
                    value = value[:-1]
                out.append(value[1:] if value.startswith(b" ") else value)
                event_lines, has_data = [], False
                self._event_type = None
            else:
                self._lines, self._has_data = event_lines, has_data
                self._line(raw, out)
                event_lines, has_data = self._lines, self._has_data
        self._lines, self._has_data = event_lines, has_data
        if last:  # (nothing is held here: what was held has just been joined)
            if len(last) > self._max_line:
                self._start_passing(last, out, in_line=True)
            else:
                self._held, self._held_size = [last], len(last)
        return out

    def _feed_long_line(self, lines: list[bytes], last: bytes, out: list[bytes | Unheld]) -> list[bytes | Unheld]:
        index = next(i for i, line in enumerate(lines) if len(line) > self._max_line)
        for raw in lines[:index]:
            self._line(raw, out)
        self._start_passing(lines[index] + b"\n", out, in_line=False)
        rest = b"".join(line + b"\n" for line in lines[index + 1 :]) + last
        return out + self.feed(rest) if rest else out

    def close(self) -> list[bytes | Unheld]:
        """Flush an event the upstream did not terminate with a blank line before closing."""
        if self._passing:
            out: list[bytes | Unheld] = []
            self._finish_passing(b"", out)
            return out
        leftover = self.feed(b"\n\n") if (self._held or self._lines) else []
        self._held, self._held_size = [], 0
        self._end_event()
        return leftover

    # --- lines that are held ---------------------------------------------------------------------------------

    def _line(self, raw: bytes, out: list[bytes | Unheld]) -> None:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:  # a blank line ends the event
            if self._has_data:
                out.append(b"\n".join(_data_value(held) for held in self._lines if held.startswith(b"data:")))
            self._end_event()
        elif line.startswith(b":"):
            if self._pass_unheld:
                out.append(Comment(line + b"\n\n"))
            else:
                self.comments.append(line)
        else:  # `data:`, and `event:` / `id:` / `retry:` (nothing ragtap needs but the event's type)
            self._lines.append(raw)
            if line.startswith(b"data:"):
                self._has_data = True
            elif line.startswith(b"event:"):
                self._event_type = line[6:].strip().decode("utf-8", "replace")

    def _end_event(self) -> None:
        self._lines, self._has_data, self._event_type = [], False, None

    def _hold(self, part: bytes, out: list[bytes | Unheld]) -> None:
        self._held.append(part)
        self._held_size += len(part)
        if self._held_size > self._max_line:
            started = b"".join(self._held)
            self._held, self._held_size = [], 0
            self._start_passing(started, out, in_line=True)

    # --- an event too large to hold -------------------------------------------------------------------------

    def _start_passing(self, start: bytes, out: list[bytes | Unheld], *, in_line: bool) -> None:
        self._passing, self._pass_in_line, self._pass_cr, self._pass_first = True, in_line, False, True
        self._pass_type = self._event_type
        self.unheld_events.append(self._event_type)
        before = b"".join(line + b"\n" for line in self._lines)
        self._end_event()
        self._emit(before + start if before else start, out, last=False)

    def _pass_on(self, chunk: bytes, pos: int, out: list[bytes | Unheld]) -> int:
        """Forward the passed event's bytes from `pos`; the position after what was forwarded."""
        if self._pass_in_line:
            end = chunk.find(b"\n", pos)
            if end < 0:
                self._emit(chunk[pos:], out, last=False)
                return len(chunk)
            self._emit(chunk[pos : end + 1], out, last=False)
            self._pass_in_line = False
            return end + 1
        if self._pass_cr:
            self._pass_cr = False
            if chunk.startswith(b"\n", pos):
                self._finish_passing(b"\n", out)
                return pos + 1
            self._pass_in_line = True
            return pos
        if chunk.startswith(b"\n", pos):  # the blank line that ends the event
            self._finish_passing(b"\n", out)
            return pos + 1
        if chunk.startswith(b"\r\n", pos):
            self._finish_passing(b"\r\n", out)
            return pos + 2
        if chunk[pos:] == b"\r":
            self._pass_cr = True
            self._emit(b"\r", out, last=False)
            return len(chunk)
        self._pass_in_line = True  # another line of the same event
        return pos

    def _finish_passing(self, end: bytes, out: list[bytes | Unheld]) -> None:
        self._passing = False
        self._emit(end, out, last=True)

    def _emit(self, data: bytes, out: list[bytes | Unheld], *, last: bool) -> None:
        if self._pass_unheld and (data or last):
            out.append(Unheld(data, self._pass_type, self._pass_first, last))
            self._pass_first = False


def _data_value(line: bytes) -> bytes:
    value = line[5:-1] if line.endswith(b"\r") else line[5:]
    return value[1:] if value.startswith(b" ") else value


def encode_event(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


DONE_EVENT = encode_event(b"[DONE]")


def encode_typed(event: dict[str, Any]) -> bytes:
    """One typed event as the Responses and Messages APIs write it: its type on an `event:` line, then the JSON."""
    data = dumps(event)  # (orjson, or the json module for what orjson does not write: deep nesting, NaN, big integers)
    if data is None:  # deeper than either writes: as the json module fails on it
        raise RecursionError("an event nested deeper than ragtap can write")
    kind = event.get("type")
    if isinstance(kind, str) and "\n" not in kind and "\r" not in kind:
        return b"event: " + kind.encode() + b"\n" + encode_event(data)
    return encode_event(data)
