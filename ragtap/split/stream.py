"""Incremental extraction of the answer from a streamed, injected JSON reply.

The injected instruction asks the model for `{"answer": "...", "supporting_content": "..."}`.  While the
reply streams in, `AnswerStreamExtractor` decodes the `answer` string and hands its text on as soon as it
arrives, collects the supporting content, and forwards the raw text unchanged when the model ignored the
instruction.  It is a character-level state machine over the new text only: each `feed()` costs
O(len(piece)), pieces are kept in lists and joined once, so a reply of n pieces costs O(total length).
Because every decision is taken per character, the outcome does not depend on how the text was cut into
pieces (only *when* text is forwarded does).

This module is the single source of truth for the JSON-string decoding rules; `split_reply` runs the same
extractor over a complete reply.

Decisions (see also `REASONS`):

* Before the object only JSON whitespace and one opening code fence (```` ``` ```` plus an optional info
  string such as `json`, up to the newline) are accepted.  Anything else first -- prose, a top-level JSON
  string/array/number -- means the model ignored the instruction: the extractor switches to *raw* mode and
  forwards everything, held-back prefix included, unchanged (`not_json`).
* Keys are matched case-insensitively, ignoring `_`, `-` and spaces: `answer`; and for the support
  `supporting_content`, `supportingContent`, `supporting`, `supporting_document(s)`, `support`.  Other keys
  are skipped (their values are only checked for string/bracket structure).  If a key repeats, the first
  occurrence wins, because streamed text cannot be taken back.
* Nothing is forwarded until the answer value shows its first non-whitespace character; the answer's
  leading whitespace is held until then.  While nothing has been forwarded the raw pieces are kept, so the
  extractor can still fall back to raw mode and forward the upstream text unchanged: on a syntax error,
  when the object closes without an answer (`no_answer`), when the answer is not recoverable
  (`answer_not_string`), or when the text ends before any answer text (`truncated`/`incomplete_json`).
  Once answer text has been forwarded the extractor is committed to JSON mode.  So the app receives either
  exactly the upstream text, or decoded answer text only -- never a mix.
* The answer is the value of the top-level `answer` key, and only a JSON string counts: null, a number, a
  boolean, an array or an object is not the model's answer text (raw fallback, `answer_not_string`).  An
  `answer` key nested inside another value is never looked at.  The supporting content is stringified
  leniently (numbers and booleans as their JSON text, an array of strings joined with newlines); a null
  support gives `no_supporting`, an unrecoverable one `supporting_not_string`.
* Text cut short (max_tokens, or the stream just ended): the answer forwarded so far stays the answer (a
  half escape or a half surrogate pair at the cut is dropped).  A partially received supporting content is
  returned in `supporting` but is *not* scoreable: `unscored_reason` is `truncated` (`incomplete_json` when
  the upstream did not report a length cut), because the part that ties the support to the answer may be
  the part that is missing.  If both strings were complete, a missing closing `}` does not matter.
* Blank values: a complete answer string that is blank is the model's answer and is forwarded as is, with
  `empty_answer` (which wins over any other reason); an answer cut before its first non-blank character
  falls back to raw.  So the app's text is blank only if the upstream's was, or the answer was blank.  An
  empty supporting string is recovered as "" (reason None): the model saying nothing supports its answer
  is itself a signal for scoring.
* Escapes: `\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX` and surrogate pairs are decoded across any cut.  A lone
  or unpaired surrogate (escaped, or a raw surrogate code point in the input) becomes U+FFFD.  Being
  lenient where models are sloppy: `\\'` decodes to `'`, an unknown escape `\\x` is kept as the two
  characters, a `\\u` not followed by four hex digits is kept literally, raw control characters inside
  strings are accepted, and a trailing comma before `}` is accepted.
* After the closing `}` only whitespace and the closing fence (when the reply opened one) belong to the
  object.  Any other text after it (a warning, a sign-off) is not ours to drop: the stream has forwarded the
  answer already, so that text is forwarded after it as it arrives (`text_after_json`, not scored);
  `split_reply`, holding the whole reply, gives the app the upstream text unchanged instead.
* Memory is bounded by `max_chars`: once more text than that was fed, the extractor keeps nothing more but
  goes on forwarding.  If nothing was forwarded yet, everything held is forwarded at once and the rest passes
  through raw; if the answer is being forwarded, it goes on being decoded and forwarded.  Either way the result
  is `reply_too_large` (not scored) and its `answer` is only the part kept.
* This is the one answer-extraction rule for streamed and whole replies (`ragtap.split.reply` runs this
  extractor): a top-level JSON object, after optional whitespace and an opening fence, whose top-level
  `answer` is a string.  Anything else is the upstream's content, unchanged.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from ragtap.split.text_pieces import TextPieces
from ragtap.types import SplitReply

# --- unscored reasons: a fixed set, they become metric labels ---------------------------------------------
EMPTY = "empty"  # the reply had no content (or only whitespace)
NOT_JSON = "not_json"  # the reply does not start with a JSON object (after an optional fence)
INVALID_JSON = "invalid_json"  # a syntax error inside the object
NO_ANSWER = "no_answer"  # a complete JSON object without an answer key
ANSWER_NOT_STRING = "answer_not_string"  # the answer is null, an object, or an array with non-strings
TRUNCATED = "truncated"  # cut by max_tokens (finish_reason "length") before the object was complete
INCOMPLETE_JSON = "incomplete_json"  # the text ended before the object was complete, without a length cut
NO_SUPPORTING = "no_supporting"  # answer recovered, but no (or a null) supporting content
SUPPORTING_NOT_STRING = "supporting_not_string"  # the supporting content is an object or a mixed array
EMPTY_ANSWER = "empty_answer"  # the answer string was complete but blank
TEXT_AFTER_JSON = "text_after_json"  # text other than whitespace / a closing fence after the object
REPLY_TOO_LARGE = "reply_too_large"  # more text than the extractor keeps (`max_chars`): forwarded, not kept
OTHER_JSON = "other_json"  # `only_ours`: a JSON object with keys of its own (the app's JSON, not ragtap's)

REASONS: frozenset[str] = frozenset(
    {
        EMPTY,
        NOT_JSON,
        INVALID_JSON,
        NO_ANSWER,
        ANSWER_NOT_STRING,
        TRUNCATED,
        INCOMPLETE_JSON,
        NO_SUPPORTING,
        SUPPORTING_NOT_STRING,
        EMPTY_ANSWER,
        TEXT_AFTER_JSON,
        REPLY_TOO_LARGE,
        OTHER_JSON,
    }
)

_ANSWER_KEYS = frozenset({"answer"})
_SUPPORT_KEYS = frozenset(
    {"supportingcontent", "supporting", "supportingdocument", "supportingdocuments", "support"}
)
_KEY_NOISE = re.compile(r"[\s_\-]+")

REPLACEMENT = "\ufffd"
_JSON_WS = frozenset(" \t\n\r")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "'": "'",  # not JSON, but models write it
}
_HEX = frozenset("0123456789abcdefABCDEF")
# Inside a string we decode, only these need per-character care; runs between them are copied in bulk.
_STRING_SPECIAL = re.compile(r'["\\\ud800-\udfff]')
_SKIP_STRING_SPECIAL = re.compile(r'["\\]')
_SCALAR_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-.")
_SCALAR_END = frozenset(" \t\n\r,}]")
_FENCE_INFO_MAX = 32  # "```json" and friends; a longer first line is not a fence before our object


class JsonStringDecoder:
    """Decodes the body of one JSON string (after its opening quote), fed in arbitrary pieces.

    Never outputs part of an escape: an escape or a high surrogate waiting for its low half is held until it
    is complete.  At a cut (the text just ends) whatever is held is dropped.
    """

    __slots__ = ("_esc", "_high", "done")

    def __init__(self) -> None:
        self._esc = ""  # the escape read so far: "", "\\", "\\u", "\\u1", "\\u12", "\\u123"
        self._high = -1  # a high surrogate waiting for its low half, else -1
        self.done = False  # the closing quote was consumed

    def feed(self, text: str, pos: int = 0) -> tuple[str, int]:
        """Decode `text[pos:]` up to and including the closing quote; return (decoded text, next index)."""
        out: list[str] = []
        i, n = pos, len(text)
        while i < n:
            if self._esc:
                c = text[i]
                if self._esc == "\\":
                    if c == "u":
                        self._esc = "\\u"
                        i += 1
                        continue
                    self._esc = ""
                    mapped = _SIMPLE_ESCAPES.get(c)
                    if mapped is None:
                        # Unknown escape: keep the backslash and look at `c` again as an ordinary character
                        # (it may be a quote ending the string, or a raw surrogate).
                        self._text(out, "\\")
                        continue
                    self._text(out, mapped)
                    i += 1
                elif c in _HEX:
                    self._esc += c
                    i += 1
                    if len(self._esc) == 6:
                        code_point = int(self._esc[2:], 16)
                        self._esc = ""
                        self._code_point(out, code_point)
                else:
                    # Not a \uXXXX escape after all: keep what was read literally and look at `c` again.
                    literal, self._esc = self._esc, ""
                    self._text(out, literal)
                continue
            match = _STRING_SPECIAL.search(text, i)
            j = n if match is None else match.start()
            if j > i:
                self._text(out, text[i:j])
            if match is None:
                i = n
                break
            c = text[j]
            i = j + 1
            if c == '"':
                self._flush_high(out)
                self.done = True
                break
            if c == "\\":
                self._esc = "\\"
            else:  # a raw surrogate code point: pair it like an escaped one
                self._code_point(out, ord(c))
        return "".join(out), i

    def _flush_high(self, out: list[str]) -> None:
        if self._high >= 0:
            out.append(REPLACEMENT)  # a high surrogate not followed by a low one
            self._high = -1

    def _text(self, out: list[str], text: str) -> None:
        self._flush_high(out)
        out.append(text)

    def _code_point(self, out: list[str], cp: int) -> None:
        if 0xDC00 <= cp <= 0xDFFF and self._high >= 0:
            out.append(chr(0x10000 + ((self._high - 0xD800) << 10) + (cp - 0xDC00)))
            self._high = -1
            return
        self._flush_high(out)
        if 0xD800 <= cp <= 0xDBFF:
            self._high = cp
        elif 0xDC00 <= cp <= 0xDFFF:
            out.append(REPLACEMENT)  # a low surrogate without a high one
        else:
            out.append(chr(cp))


def _sanitize(text: str) -> str:
    """Replace lone surrogates (json.loads lets "\\ud800" through) so the text can be encoded as UTF-8."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _stringify(raw: str) -> str | None:
    """The text of a non-string value (see the module docstring), or None when it has none."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, (bool, int, float)):
        return raw.strip()  # as written: json.dumps would turn 1e400 into "Infinity"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return _sanitize("\n".join(value))
    return None


def _role_of(key: str) -> str:
    normalised = _KEY_NOISE.sub("", key).lower()
    if normalised in _ANSWER_KEYS:
        return "answer"
    if normalised in _SUPPORT_KEYS:
        return "support"
    return ""


class _S(enum.Enum):
    PRELUDE = enum.auto()  # before the object: whitespace, optional fence
    FENCE = enum.auto()  # in the opening fence line
    KEY_OR_END = enum.auto()  # after "{" or ",": a key or "}"
    KEY = enum.auto()  # inside a key string
    COLON = enum.auto()
    VALUE = enum.auto()  # before a value
    STRING = enum.auto()  # inside the answer or supporting string
    SKIP = enum.auto()  # inside any other value (captured when it belongs to answer/support)
    COMMA_OR_END = enum.auto()  # after a value: "," or "}"
    TAIL = enum.auto()  # after the object's "}": whitespace and a closing fence are held, not forwarded
    TAIL_TEXT = enum.auto()  # other text came after the object: it is forwarded as it arrives
    IGNORE = enum.auto()  # JSON mode is settled; the rest of the text is ignored
    RAW = enum.auto()  # the text is forwarded unchanged


# Progress of the answer / the supporting content.
_NONE, _PARTIAL, _DONE, _INVALID = "none", "partial", "done", "invalid"


@dataclass(frozen=True, slots=True)
class StreamResult:
    """The outcome of a stream, returned by `AnswerStreamExtractor.finish()`.

    `remainder` is what still has to be forwarded to the app; `answer` is everything the app received in
    total (all `feed()` outputs + `remainder`).  In raw mode that is the upstream text unchanged and
    `supporting` is None.
    """

    remainder: str
    answer: str
    supporting: str | None
    mode: Literal["json", "raw"]
    unscored_reason: str | None
    # The object had a syntax error after the answer was settled (a stream ignores the rest of the text; a
    # whole reply is then not a JSON object, and `split_reply` gives the upstream text unchanged).
    syntax_error: bool = False

    @property
    def recovered(self) -> bool:
        return self.mode == "json"

    def to_split_reply(self) -> SplitReply:
        return SplitReply(
            answer=self.answer,
            supporting=self.supporting,
            recovered=self.recovered,
            unscored_reason=self.unscored_reason,
        )


DEFAULT_MAX_CHARS = 4_000_000  # about a million tokens of text: far beyond any answer a model writes


class AnswerStreamExtractor:
    """Feed the model's content pieces as they arrive; forward what `feed()` returns, then `finish()`."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS, *, lead_in: int = 0, only_ours: bool = False) -> None:
        self._max_chars = max_chars
        # Characters of prose allowed before the object ("Here is the JSON:", for APIs without a JSON mode): dropped.
        # With a lead-in, text after the object follows the answer after a blank line (its fence dropped).
        self._lead_in = lead_in
        self._lenient = lead_in > 0
        # A turn ragtap did not inject (a follow-up of one it did): only an object whose keys are all ragtap's, an
        # answer and a supporting content, is ragtap's format; any other object is the app's own JSON, unchanged.
        # Keys can come in any order, so the answer is held until the object closes (`_held_answer`).
        self._only_ours = only_ours
        self._held_answer: TextPieces | None = TextPieces() if only_ours else None
        self._fed = 0  # characters fed so far
        self.overflow = False  # more than `max_chars` were fed: nothing more is kept
        self._state = _S.PRELUDE
        # (kept as TextPieces, not lists of the pieces: a list of 4-character strings costs ~15 times the text)
        self._raw: TextPieces | None = TextPieces()  # pieces fed while a fall back to raw mode is still possible
        self._out = TextPieces()  # everything handed to the app
        self._switch: str | None = None  # held text to forward on switching to raw mode during a feed
        self._reason: str | None = None  # why we switched to raw mode
        self._fence_ticks = 0
        self._fence_info = 0
        self._fence_spaced = False  # the fence's info string has two words: a "{" later on that line is not ours
        self._fence_gap = False
        self._fence_seen = False
        self._closed = False  # the object's closing "}" was seen
        self._tail_hold: list[str] = []  # whitespace / closing fence after the object, forwarded only before text
        self._tail_ticks = 0
        self._error = False  # a syntax error after the answer was settled
        self._key_decoder = JsonStringDecoder()
        self._key_parts: list[str] = []
        self._role = ""  # "answer", "support" or "" for the value being read
        self._value_decoder = JsonStringDecoder()
        self._answer = _NONE
        self._answer_visible = False  # non-whitespace answer text has been forwarded
        self._answer_hold: list[str] = []  # the answer's leading whitespace, not forwarded yet
        self._support = _NONE
        self._support_parts = TextPieces()
        self._support_reason: str | None = None  # set when the support value is unrecoverable
        self._skip_stack: list[str] = []  # closing brackets expected inside a skipped value
        self._skip_in_string = False
        self._skip_escape = False
        self._skip_scalar = False
        self._capture: TextPieces | None = None  # raw text of a non-string answer/support value
        self._result: StreamResult | None = None

    # --- public API ----------------------------------------------------------------------------------------

    @property
    def raw_reason(self) -> str | None:
        """Why the reply is passed on unchanged (the model ignored the instruction: `not_json`, ...), once the
        extractor has switched to that; None while it reads (or has read) the JSON answer."""
        return self._reason if self._state is _S.RAW else None

    @property
    def answer_complete(self) -> bool:
        """The answer string has closed: no more answer text will come (the supporting content may still)."""
        return self._answer == _DONE

    def feed(self, text: str) -> str:
        """Take the next piece of the model's content; return the text to forward to the app now."""
        if self._result is not None:
            raise RuntimeError("feed() after finish()")
        if not text:
            return ""
        state = self._state
        self._fed += len(text)
        if self._fed > self._max_chars and not self.overflow:
            self.overflow = True
            self._drop_kept()
            if self._raw is not None:  # nothing forwarded yet: hand over what is held, then pass the rest through
                self._raw.append(text)
                self._to_raw(REPLY_TOO_LARGE)
                forwarded, self._switch = self._switch or "", None
                return forwarded
        if state is _S.RAW or state is _S.TAIL_TEXT:
            self._keep(text)
            return text
        if state is _S.IGNORE:
            return ""
        if self._raw is not None:
            self._raw.append(text)
        emitted: list[str] = []
        i, n = 0, len(text)
        while i < n and self._state is not _S.RAW and self._state is not _S.IGNORE:
            if self._state is _S.TAIL:
                i = self._in_tail(text, i, emitted)
                continue
            i = self._step(text, i, emitted)
        if self._switch is not None:  # switched to raw: the held text includes this whole piece
            forwarded, self._switch = self._switch, None
        else:
            forwarded = "".join(emitted)
        if forwarded:
            self._keep(forwarded)
        return forwarded

    def _keep(self, forwarded: str) -> None:
        if not self.overflow:
            self._out.append(forwarded)

    def _drop_kept(self) -> None:
        """Over `max_chars`: free what only scoring would have used (the answer kept so far stays, for the record)."""
        self._support_parts = TextPieces()
        self._capture = None
        self._key_parts = []

    def finish(self, *, truncated: bool = False) -> StreamResult:
        """End of the stream; `truncated` is True when the upstream stopped for max_tokens ("length")."""
        if self._result is not None:
            raise RuntimeError("finish() called twice")
        self._result = self._conclude(truncated)
        # The result holds the texts now: drop the pieces they were joined from (a stream that lives on after its
        # text is done -- a Responses stream to its final event, an app that stops reading -- would keep both).
        self._raw, self._out, self._support_parts, self._capture, self._held_answer = None, TextPieces(), TextPieces(), None, None
        return self._result

    # --- outcome -------------------------------------------------------------------------------------------

    def _conclude(self, truncated: bool) -> StreamResult:
        result = self._outcome(truncated)
        if self.overflow:
            return StreamResult(result.remainder, result.answer, None, result.mode, REPLY_TOO_LARGE)
        return result

    def _outcome(self, truncated: bool) -> StreamResult:
        state = self._state
        if state is _S.RAW:
            return StreamResult("", self._out.text(), None, "raw", self._reason)
        if state is _S.TAIL_TEXT:  # the answer, then the upstream's text after the object: nothing to score
            return StreamResult("", self._out.text(), None, "json", TEXT_AFTER_JSON)
        cut = TRUNCATED if truncated else INCOMPLETE_JSON
        if state is _S.PRELUDE or state is _S.FENCE:  # never reached "{"
            held = self._raw.text() if self._raw is not None else ""
            reason = EMPTY if not held.strip() else (TRUNCATED if truncated else NOT_JSON)
            return self._raw_result(held, reason)
        if self._held_answer is not None:  # `only_ours`, the object never closed: not known to be ragtap's
            return self._raw_result(self._raw.text() if self._raw is not None else "", cut)
        if self._answer == _DONE or self._answer_visible:
            answer = self._out.text()
            supporting: str | None = None
            if self._answer == _DONE:
                reason = self._support_outcome(cut)
                if self._support in (_DONE, _PARTIAL):
                    supporting = self._support_parts.text()
                if not answer.strip():
                    reason = EMPTY_ANSWER
            else:  # cut inside the answer: what was forwarded stays the answer
                reason = cut
                if self._support == _DONE:
                    supporting = self._support_parts.text()
            return StreamResult("", answer, supporting, "json", reason, syntax_error=self._error)
        # Nothing was forwarded yet: give the app the upstream text unchanged.
        reason = ANSWER_NOT_STRING if self._answer == _INVALID else cut
        return self._raw_result(self._raw.text() if self._raw is not None else "", reason)

    def _support_outcome(self, cut: str) -> str | None:
        if self._support == _DONE:
            return None
        if self._support == _PARTIAL:
            return cut
        if self._support == _INVALID:
            return self._support_reason
        if self._closed:
            return NO_SUPPORTING
        return INVALID_JSON if self._error else cut

    def _raw_result(self, remainder: str, reason: str) -> StreamResult:
        if remainder:
            self._keep(remainder)
        self._state = _S.RAW
        return StreamResult(remainder, self._out.text(), None, "raw", reason)

    # --- transitions ---------------------------------------------------------------------------------------

    def _to_raw(self, reason: str) -> None:
        # Only reachable while nothing was forwarded, so forwarding the held text loses and repeats nothing.
        assert not self._out and self._raw is not None
        self._switch = self._raw.text()
        self._raw = None
        self._held_answer = None
        self._reason = reason
        self._state = _S.RAW

    def _syntax_error(self) -> None:
        if (self._answer == _DONE and not self._only_ours) or self._answer_visible:
            self._error = True
            self._state = _S.IGNORE
        else:
            self._to_raw(INVALID_JSON)

    def _close(self, emitted: list[str]) -> None:
        self._closed = True
        if self._answer == _DONE and self._held_answer is not None:  # `only_ours`: the object was ragtap's?
            if self._support == _NONE:
                self._to_raw(OTHER_JSON)
                return
            emitted.append(self._held_answer.text())
            self._held_answer = None
            self._answer_visible = True
            self._raw = None
            self._state = _S.TAIL
        elif self._answer == _DONE:
            self._state = _S.TAIL
        else:
            self._to_raw(ANSWER_NOT_STRING if self._answer == _INVALID else NO_ANSWER)

    def _forward_answer(self, text: str, emitted: list[str]) -> None:
        if not text:
            return
        if self._held_answer is not None:  # `only_ours`: held until the object closes
            self._held_answer.append(text)
            return
        if self._answer_visible:
            emitted.append(text)
        elif text.isspace():
            self._answer_hold.append(text)
        else:
            self._answer_hold.append(text)
            emitted.append("".join(self._answer_hold))
            self._answer_hold.clear()
            self._answer_visible = True
            self._raw = None  # committed to JSON mode: no fall back, stop keeping the raw text

    def _answer_done(self, text: str | None, emitted: list[str]) -> None:
        if text is None:
            self._answer = _INVALID
            return
        self._forward_answer(text, emitted)
        if self._answer_hold:  # a blank answer is still the model's answer
            emitted.append("".join(self._answer_hold))
            self._answer_hold.clear()
        self._answer = _DONE
        if self._held_answer is None:  # (`only_ours` keeps the raw text until the object closes)
            self._raw = None

    # --- the state machine ---------------------------------------------------------------------------------

    def _step(self, t: str, i: int, emitted: list[str]) -> int:
        """Consume from `t[i]` on (one character, or a run inside a string/skipped value); return the index."""
        state = self._state
        if state is _S.STRING:
            return self._in_value_string(t, i, emitted)
        if state is _S.SKIP:
            return self._in_skip(t, i, emitted)
        if state is _S.KEY:
            return self._in_key(t, i)
        c = t[i]
        if state is _S.FENCE:
            self._in_fence(c)
            return i + 1
        if c in _JSON_WS:
            return i + 1
        if state is _S.PRELUDE:
            if c == "{":
                self._state = _S.KEY_OR_END
            elif c == "`" and not self._fence_seen:
                self._fence_seen = True
                self._fence_ticks = 1
                self._state = _S.FENCE
            elif self._lead_in > 0:  # a preamble before the object: held, then dropped
                self._lead_in -= 1
            else:
                self._to_raw(NOT_JSON)
        elif state is _S.KEY_OR_END:
            if c == '"':
                self._key_decoder = JsonStringDecoder()
                self._key_parts = []
                self._state = _S.KEY
            elif c == "}":  # also after a trailing comma
                self._close(emitted)
            else:
                self._syntax_error()
        elif state is _S.COLON:
            if c == ":":
                self._state = _S.VALUE
            else:
                self._syntax_error()
        elif state is _S.VALUE:
            return self._value_start(t, i, c)
        elif state is _S.COMMA_OR_END:
            if c == ",":
                self._state = _S.KEY_OR_END
            elif c == "}":
                self._close(emitted)
            else:
                self._syntax_error()
        return i + 1

    def _in_tail(self, t: str, i: int, emitted: list[str]) -> int:
        """After the object: hold whitespace and the closing fence; on any other text forward it all from here."""
        n = len(t)
        while i < n:
            c = t[i]
            if c in _JSON_WS:
                pass
            elif c == "`" and self._fence_seen and self._tail_ticks < 3:
                self._tail_ticks += 1
            else:
                if self._lenient:  # the fence and the whitespace around it give way to one blank line
                    self._tail_hold = ["\n\n"]
                self._tail_hold.append(t[i:])  # (forwarded at once, never kept)
                emitted.append("".join(self._tail_hold))
                self._tail_hold.clear()
                self._state = _S.TAIL_TEXT
                return n
            if not self.overflow:
                self._tail_hold.append(c)
            i += 1
        return i

    def _in_fence(self, c: str) -> None:
        if self._fence_ticks < 3:
            if c == "`":
                self._fence_ticks += 1
            elif self._lead_in > 0:  # `inline code` in a preamble, not a fence
                self._lead_in -= 1
                self._fence_seen, self._fence_ticks = False, 0
                self._state = _S.PRELUDE
            else:
                self._to_raw(NOT_JSON)
        elif c == "\n":
            self._state = _S.PRELUDE
        elif c == "{" and not self._fence_spaced:  # "```json{" on one line; not "```python 0{": an info string
            self._state = _S.KEY_OR_END
        elif (c.isalnum() or c in " \t\r_+.-") and self._fence_info < _FENCE_INFO_MAX:
            self._fence_info += 1
            if c in " \t":
                self._fence_gap = self._fence_info > 1
            elif self._fence_gap:
                self._fence_spaced = True  # a second word: "```python 0" (a space before "{" alone is fine: "```json {")
        else:
            self._to_raw(NOT_JSON)

    def _in_key(self, t: str, i: int) -> int:
        decoded, i = self._key_decoder.feed(t, i)
        if decoded and not self.overflow:
            self._key_parts.append(decoded)
        if self._key_decoder.done:
            role = _role_of("".join(self._key_parts))
            if self._only_ours and (not role or (role == "answer" and self._answer != _NONE) or (role == "support" and self._support != _NONE)):
                self._to_raw(OTHER_JSON)  # a key of the app's own (or one repeated): not ragtap's object
                return i
            # The first occurrence wins: text already forwarded cannot be taken back.
            if (role == "answer" and self._answer != _NONE) or (role == "support" and self._support != _NONE):
                role = ""
            self._role = role
            self._state = _S.COLON
        return i

    def _value_start(self, t: str, i: int, c: str) -> int:
        role = self._role
        if c == '"':
            if role:
                self._value_decoder = JsonStringDecoder()
                if role == "answer":
                    self._answer = _PARTIAL
                else:
                    self._support = _PARTIAL
                self._state = _S.STRING
                return i + 1
            self._start_skip(in_string=True, capture=False)
            return i + 1
        if c == "{" or c == "[":
            self._start_skip(in_string=False, capture=bool(role))
            self._skip_stack.append("}" if c == "{" else "]")
            if self._capture is not None:
                self._capture.append(c)
            return i + 1
        if c in _SCALAR_CHARS:
            self._start_skip(in_string=False, capture=bool(role))
            self._skip_scalar = True
            return i  # the skipper reads the scalar from its first character
        self._syntax_error()
        return i + 1

    def _start_skip(self, *, in_string: bool, capture: bool) -> None:
        self._skip_stack = []
        self._skip_in_string = in_string
        self._skip_escape = False
        self._skip_scalar = False
        self._capture = TextPieces() if capture else None
        self._state = _S.SKIP

    def _in_value_string(self, t: str, i: int, emitted: list[str]) -> int:
        decoded, i = self._value_decoder.feed(t, i)
        done = self._value_decoder.done
        if self._role == "answer":
            if done:
                self._answer_done(decoded, emitted)
            else:
                self._forward_answer(decoded, emitted)
        else:
            if decoded and not self.overflow:
                self._support_parts.append(decoded)
            if done:
                self._support = _DONE
        if done:
            self._state = _S.COMMA_OR_END
        return i

    def _in_skip(self, t: str, i: int, emitted: list[str]) -> int:
        start, n = i, len(t)
        stack = self._skip_stack
        while i < n:
            if self._skip_escape:
                self._skip_escape = False
                i += 1
                continue
            if self._skip_in_string:
                match = _SKIP_STRING_SPECIAL.search(t, i)
                if match is None:
                    i = n
                    break
                i = match.end()
                if match.group() == "\\":
                    self._skip_escape = True
                else:
                    self._skip_in_string = False
                    if not stack:  # a top-level string value ended
                        return self._skip_done(t, start, i, emitted)
                continue
            c = t[i]
            if self._skip_scalar:
                if c in _SCALAR_END:
                    return self._skip_done(t, start, i, emitted)  # the delimiter is not part of the value
                if c not in _SCALAR_CHARS:
                    self._syntax_error()
                    return i + 1
                i += 1
                continue
            i += 1
            if c == '"':
                self._skip_in_string = True
            elif c == "{":
                stack.append("}")
            elif c == "[":
                stack.append("]")
            elif c == "}" or c == "]":
                if stack.pop() != c:  # the stack is not empty here: we are inside a bracket
                    self._syntax_error()
                    return i
                if not stack:
                    return self._skip_done(t, start, i, emitted)
        if self._capture is not None and not self.overflow:
            self._capture.append(t[start:i])
        return i

    def _skip_done(self, t: str, start: int, i: int, emitted: list[str]) -> int:
        self._state = _S.COMMA_OR_END
        if self._capture is None:
            return i
        self._capture.append(t[start:i])
        raw = self._capture.text()
        self._capture = None
        if self._role == "answer":  # only a string is the answer (see the module docstring)
            self._answer_done(None, emitted)
            return i
        text = _stringify(raw)
        if text is not None:
            self._support_parts = TextPieces()
            self._support_parts.append(text)
            self._support = _DONE
        else:
            self._support = _INVALID
            self._support_reason = NO_SUPPORTING if raw.strip() == "null" else SUPPORTING_NOT_STRING
        return i


def extract(text: str, *, truncated: bool = False, lead_in: int = 0, only_ours: bool = False) -> StreamResult:
    """Run the extractor over a complete text in one piece."""
    extractor = AnswerStreamExtractor(lead_in=lead_in, only_ours=only_ours)
    extractor.feed(text)
    return extractor.finish(truncated=truncated)
