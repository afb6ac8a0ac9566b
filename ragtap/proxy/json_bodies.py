"""JSON bodies as ragtap reads and writes them: orjson where it can, the json module for what orjson does not do
(integers beyond 64 bits, NaN / Infinity / lone surrogates in replies, nesting deeper than orjson writes).  Used
for requests and replies (`exchange_path.read` re-exports both) and for stream events (`proxy/sse.py`)."""

from __future__ import annotations

import json
from typing import Any

import orjson

# orjson reads an integer beyond 64 bits as a float (123456789012345678901234567890 -> 1.2345678901234568e+29):
# a body with a run of 20 digits anywhere (where such an integer would be) is read again by the json module, which
# keeps integers exact.  (Runs inside strings send a body the slower way too; its values are the same.)  The run is
# found by mapping every digit to "0" and searching for twenty of them: two C loops over the bytes, where the regex
# `\d{20}` tried a match at every position (14 us on a 1.5 KB chat request, a quarter of the event loop's
# instructions for a plain chat; this is 1 us).
# A negative integer of 19 digits may lie below -2**63 (-9223372036854775809): a minus sign before 19 digits counts too.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_TWENTY_DIGITS = b"0" * 20
_NEGATIVE_NINETEEN = b"-" + b"0" * 19


def _has_long_digit_run(raw: bytes) -> bool:
    zeros = raw.translate(_DIGITS_AS_ZERO)
    return _TWENTY_DIGITS in zeros or _NEGATIVE_NINETEEN in zeros


class JsonConstant(float):
    """NaN, Infinity or -Infinity read from a reply (`lenient`): written back as they came (orjson would write
    null; it refuses this type, so `dumps` hands it to the json module, which writes the constant)."""


def parse_object(raw: bytes, *, lenient: bool = False) -> dict[str, Any] | None:
    """A JSON object, or None (not JSON, or JSON that is not an object).  Integers beyond 64 bits stay exact.
    `lenient` (replies, which ragtap must be able to restore): also what only Python's json reads -- NaN, Infinity,
    lone surrogate escapes -- so the app never gets ragtap's instruction back because orjson refused a value."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not lenient:
            return None
        try:
            value = json.loads(raw, parse_constant=JsonConstant)
        except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
            return None
    else:
        if _has_long_digit_run(raw):
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # deeper than the json module reads: orjson's reading stands
                pass
    return value if isinstance(value, dict) else None


def dumps(value: Any) -> bytes | None:
    """JSON bytes of a decoded body, or None.  orjson reads 1024 levels of nesting but writes only 254, and writes
    no integer beyond 64 bits, no `JsonConstant` and no lone surrogate: those values go through the json module
    (about 990 levels; with \\u escapes where UTF-8 cannot carry a character); deeper still, None."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:
            return json.dumps(value, separators=(",", ":")).encode()
        except (RecursionError, ValueError, TypeError):
            return None
