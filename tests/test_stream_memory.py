"""Issue 24 (smaller): what a stream keeps of its answer costs about the answer's size, not ~15 times it.

A stream's answer is kept (for scoring and the record) while the stream lasts, and an app that stops reading makes
that as long as it likes.  Kept as a list of its pieces (a token or two each), a 3 MB answer took 46 MB (each piece
a str object of its own); `TextPieces` keeps it in about 3 MB.  Measured with tracemalloc (Python's allocations
only, the numbers are exact and do not depend on the machine's load).  bench/stalled_reader.py measures the same
through `ragtap serve` (RSS, with apps that stop reading)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from ragtap.split.stream import AnswerStreamExtractor
from ragtap.split.text_pieces import FANOUT, TextPieces

ANSWER = ("The tyre is changed in a star pattern. " * 12_000)[:400_000]  # 400 kB of ASCII (the ratio is what counts)


def _peak_while_feeding(extractor: AnswerStreamExtractor, text: str, piece: int) -> int:
    tracemalloc.start()
    try:
        for i in range(0, len(text), piece):
            extractor.feed(text[i : i + piece])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("piece", [4, 16])
def test_an_answer_streamed_in_small_pieces_is_kept_in_about_its_size(piece: int) -> None:
    reply = json.dumps({"answer": ANSWER, "supporting_content": "Change it in a star pattern."})
    extractor = AnswerStreamExtractor()
    peak = _peak_while_feeding(extractor, reply, piece)
    result = extractor.finish()
    assert result.answer == ANSWER and result.unscored_reason is None
    assert peak < 1.5 * len(ANSWER), f"{peak / len(ANSWER):.1f} times the answer kept"  # was 15x / 4.6x


def test_text_that_ignored_the_instruction_is_kept_in_about_its_size_too() -> None:
    extractor = AnswerStreamExtractor()
    peak = _peak_while_feeding(extractor, ANSWER, 4)  # not JSON: held, then passed through raw
    result = extractor.finish()
    assert result.mode == "raw" and result.answer == ANSWER
    assert peak < 1.5 * len(ANSWER), peak


def test_text_pieces_keep_order_and_size_across_levels() -> None:
    pieces = TextPieces()
    expected = []
    for n in range(FANOUT**2 * 3 + 17):  # three full second-level runs and a tail: every level is used
        piece = str(n % 10) * (n % 3)
        pieces.append(piece)
        expected.append(piece)
    assert pieces.text() == "".join(expected) and pieces.size == len("".join(expected))
    assert not TextPieces() and pieces
