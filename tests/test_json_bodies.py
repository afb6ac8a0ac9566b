"""`proxy/json_bodies.py`: the test for a run of 20 digits, or of 19 after a minus (which sends a body to the json
module, so integers beyond 64 bits stay exact) finds exactly what the regex `\\d{20}|-\\d{19}` finds."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.proxy.json_bodies import _has_long_digit_run, parse_object

_REGEX = re.compile(rb"\d{20}|-\d{19}")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=8), st.sampled_from([b"0" * 19, b"-" + b"9" * 19, b"9" * 20, b"1234567890" * 3, b"\xd9\xa0" * 20]),
                          st.integers(min_value=0, max_value=10**30).map(lambda n: str(n).encode())), max_size=12))
def test_the_digit_run_test_agrees_with_the_regex(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    assert _has_long_digit_run(raw) == bool(_REGEX.search(raw))


def test_boundaries() -> None:
    assert not _has_long_digit_run(b'{"seed": 1234567890123456789}')  # 19 digits
    assert _has_long_digit_run(b'{"seed": 12345678901234567890}')  # 20
    assert not _has_long_digit_run(b'{"a": "1234567890", "b": 1234567890}')  # 20 digits, not in one run
    assert not _has_long_digit_run("\u0660".encode() * 30)  # Arabic-Indic digits: not [0-9], as with the bytes regex


def test_integers_beyond_64_bits_stay_exact() -> None:
    big = 2**64  # 18446744073709551616: 20 digits, one past what orjson reads as an integer
    assert parse_object(json.dumps({"seed": big}).encode()) == {"seed": big}
    assert parse_object(json.dumps({"seed": 2**64 - 1}).encode()) == {"seed": 2**64 - 1}


def test_negative_integers_beyond_64_bits_stay_exact() -> None:
    small = -(2**63) - 1  # -9223372036854775809: 19 digits, one below what orjson reads as an integer
    assert parse_object(json.dumps({"seed": small}).encode()) == {"seed": small}
    assert parse_object(json.dumps({"seed": -(2**63)}).encode()) == {"seed": -(2**63)}
