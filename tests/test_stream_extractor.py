"""Properties of the streaming extractor: correct for every way the upstream can cut the text into pieces."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.split import REASONS, AnswerStreamExtractor, StreamResult, split_reply
from ragtap.split.stream import extract

SUPPORT_KEYS = ["supporting_content", "supportingContent", "supporting", "supporting_document", "support"]
JSON_WS = st.text(alphabet=" \t\n\r", max_size=3)
# Characters that drive the state machine, for texts that look like (broken) JSON.
JSONISH = st.text(alphabet='{}[]":,\\ \nu0dD8eE9fFabnrt/\'`-1answerupig_😀é', max_size=60)
# Strings full of quotes, backslashes and brackets, to check that skipped values end where they should.
TRICKY_TEXT = st.text(max_size=8) | st.text(alphabet='"\\{}[],:ab', max_size=8)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TRICKY_TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TRICKY_TEXT, children, max_size=3),
    max_leaves=6,
)
# Keys for extra members; this alphabet cannot spell an answer or support key.
EXTRA_KEYS = st.text(alphabet='xyzé😀"\\', max_size=6)


def cut(text: str, data: st.DataObject) -> list[str]:
    """Any split of `text` into pieces: one character each, or at arbitrary (possibly repeated) points."""
    if data.draw(st.booleans(), label="per_character"):
        return list(text)
    points = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts"))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def run(pieces: list[str], *, truncated: bool = False) -> tuple[str, StreamResult, list[str]]:
    """Feed the pieces; return (all text forwarded, the result, the forwarded text after each feed)."""
    extractor = AnswerStreamExtractor()
    forwarded: list[str] = []
    progress: list[str] = []
    for piece in pieces:
        forwarded.append(extractor.feed(piece))
        progress.append("".join(forwarded))
    result = extractor.finish(truncated=truncated)
    forwarded.append(result.remainder)
    return "".join(forwarded), result, progress


@st.composite
def injected_replies(draw: st.DrawFn) -> tuple[str, str, str]:
    """(serialised reply, answer, supporting): our object in any key order, whitespace, escaping, fence."""
    answer = draw(st.text(), label="answer")
    support = draw(st.text(), label="support")
    ensure_ascii = draw(st.booleans(), label="ensure_ascii")
    members = [("answer", answer), (draw(st.sampled_from(SUPPORT_KEYS)), support)]
    members += draw(st.lists(st.tuples(EXTRA_KEYS, JSON_VALUES), max_size=3), label="extra")
    members = draw(st.permutations(members))

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii)

    body = ",".join(
        draw(JSON_WS) + dumps(k) + draw(JSON_WS) + ":" + draw(JSON_WS) + dumps(v) + draw(JSON_WS) for k, v in members
    )
    text = draw(JSON_WS) + "{" + body + "}" + draw(JSON_WS)
    fence = draw(st.sampled_from(["", "```json\n", "```\n", "``` JSON\r\n"]))
    if fence:
        text = fence + text + draw(st.sampled_from(["", "```", "\n```\n"]))
    return draw(JSON_WS) + text, answer, support


# (a) our object, any cut: the app gets exactly the decoded answer, and never half an escape on the way.
@settings(max_examples=300, deadline=None)
@given(injected_replies(), st.data())
def test_json_reply_any_split(reply: tuple[str, str, str], data: st.DataObject) -> None:
    text, answer, support = reply
    output, result, progress = run(cut(text, data))
    assert output == answer
    assert all(answer.startswith(p) for p in progress)  # nothing forwarded that is not the answer's prefix
    assert result.answer == answer
    assert result.supporting == support
    assert result.mode == "json"
    assert result.unscored_reason == (None if answer.strip() else "empty_answer")
    assert split_reply(text) == result.to_split_reply()


# (a') the same object cut by max_tokens at any point: a prefix of the answer, or the upstream text unchanged.
@settings(max_examples=300, deadline=None)
@given(injected_replies(), st.data())
def test_truncated_json_reply_any_split(reply: tuple[str, str, str], data: st.DataObject) -> None:
    full, answer, support = reply
    text = full[: data.draw(st.integers(0, len(full)), label="length")]
    output, result, progress = run(cut(text, data), truncated=True)
    assert output == result.answer
    if result.mode == "json":
        assert answer.startswith(output)
        assert all(answer.startswith(p) for p in progress)
        assert result.supporting is None or support.startswith(result.supporting)
        if result.unscored_reason is None:
            assert (output, result.supporting) == (answer, support)
    else:
        assert output == text
        assert result.supporting is None
        assert result.unscored_reason in REASONS
    # The app never gets an empty answer when the upstream sent something, unless the model's answer was blank.
    if text.strip() and not output.strip():
        assert result.unscored_reason == "empty_answer"


@st.composite
def non_json_texts(draw: st.DrawFn) -> str:
    """Text whose first character after whitespace (and after an optional fence) is not "{"."""
    first = draw(st.characters().filter(lambda c: c not in "{` \t\n\r"), label="first")
    prefix = draw(JSON_WS) + draw(st.sampled_from(["", "```\n", "```json\n", "```python "]))
    return prefix + draw(JSON_WS) + first + draw(st.text(), label="rest")


# (b) the model ignored the instruction: the app gets the upstream text unchanged, whatever the cut.
@settings(max_examples=300, deadline=None)
@given(non_json_texts(), st.data())
def test_non_json_passes_through_unchanged(text: str, data: st.DataObject) -> None:
    output, result, progress = run(cut(text, data), truncated=data.draw(st.booleans()))
    assert output == text
    assert all(text.startswith(p) for p in progress)
    assert result.mode == "raw"
    assert result.unscored_reason in {"not_json", "truncated"}  # "truncated" only when cut inside the fence
    assert result.supporting is None
    reply = split_reply(text)
    assert reply.recovered or reply.answer == text


ANY_TEXT = st.one_of(
    st.text(),
    JSONISH,
    st.tuples(
        st.sampled_from(['{"answer": "', '{"support": "', '```json\n{"answer":', "{", '{"x": [', '{"answer": ["']),
        JSONISH,
    ).map("".join),
)


# (c) anything at all, cut anywhere: no crash; the result does not depend on the cut; the app receives
# either the upstream text unchanged (raw) or only decoded answer text (json); and the app's text is blank
# only if the upstream's was, or the model's complete answer string was itself blank ("empty_answer").
@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, st.booleans(), st.data())
def test_any_text_any_split(text: str, truncated: bool, data: st.DataObject) -> None:
    output, result, _ = run(cut(text, data), truncated=truncated)
    whole = extract(text, truncated=truncated)
    assert output == result.answer
    assert (result.answer, result.supporting, result.mode, result.unscored_reason) == (
        whole.answer,
        whole.supporting,
        whole.mode,
        whole.unscored_reason,
    )
    if result.mode == "raw":
        assert output == text
        assert result.supporting is None
        assert result.unscored_reason in REASONS
    else:
        assert result.unscored_reason is None or result.unscored_reason in REASONS
        if result.syntax_error or result.unscored_reason == "text_after_json":  # the stream had forwarded the answer
            assert split_reply(text, truncated=truncated).answer == text
        else:
            assert split_reply(text, truncated=truncated) == result.to_split_reply()
    if text.strip() and not output.strip():
        assert result.mode == "json" and result.unscored_reason == "empty_answer"


# --- escapes cut at every position ---------------------------------------------------------------------------

ESCAPES = r'{"support": "s\"\u00e9\ud83d\ude00", "answer": "a\"b\\c\/d\be\ff\ng\rh\ti\u00e9j\ud83d\ude00k\uD83D\uDE00"}'
ESCAPES_ANSWER = 'a"b\\c/d\be\ff\ng\rh\ti\u00e9j😀k😀'


def test_escapes_two_pieces_every_position() -> None:
    for i in range(len(ESCAPES) + 1):
        output, result, progress = run([ESCAPES[:i], ESCAPES[i:]])
        assert output == ESCAPES_ANSWER, i
        assert result.supporting == 's"é😀'
        assert all(ESCAPES_ANSWER.startswith(p) for p in progress)


def test_escapes_three_pieces_every_pair_of_positions() -> None:
    start = ESCAPES.index('"answer"')
    for i in range(start, len(ESCAPES) + 1):
        for j in range(i, len(ESCAPES) + 1):
            output, result, _ = run([ESCAPES[:i], ESCAPES[i:j], ESCAPES[j:]])
            assert output == ESCAPES_ANSWER, (i, j)


def test_escapes_one_character_at_a_time_never_emit_half_an_escape() -> None:
    output, _, progress = run(list(ESCAPES))
    assert output == ESCAPES_ANSWER
    assert all(ESCAPES_ANSWER.startswith(p) for p in progress)
    # The pair \ud83d\ude00 is forwarded as one character once its last hex digit arrives, not before.
    end = ESCAPES.rindex(r"\uDE00") + len(r"\uDE00")
    assert progress[end - 2] == ESCAPES_ANSWER[:-1]
    assert progress[end - 1] == ESCAPES_ANSWER


@pytest.mark.parametrize(
    ("escaped", "decoded"),
    [
        (r"\ud800", "\ufffd"),  # lone high at the end of the string
        (r"\udc00", "\ufffd"),  # lone low
        (r"\ud800x", "\ufffdx"),
        (r"\ud800\n", "\ufffd\n"),
        (r"\ud800\ud800\udc00", "\ufffd\U00010000"),
        (r"\udbff\udfff", "\U0010ffff"),
        ("\ud83d\ude00", "😀"),  # raw surrogate code points (as a lenient JSON decoder may hand them over)
        ("\ud83d", "\ufffd"),
    ],
)
def test_surrogates_any_split(escaped: str, decoded: str) -> None:
    text = '{"answer": "<' + escaped + '>", "support": "s"}'
    for i in range(len(text) + 1):
        output, result, _ = run([text[:i], text[i:]])
        assert output == "<" + decoded + ">"
        assert result.unscored_reason is None


# --- holding back and falling back -----------------------------------------------------------------------------


def test_support_first_holds_until_answer_starts() -> None:
    extractor = AnswerStreamExtractor()
    assert extractor.feed('{"supporting_content": "the doc') == ""
    assert extractor.feed(' says so", "answer": "  ') == ""  # leading whitespace is held, too
    assert extractor.feed("Yes") == "  Yes"
    assert extractor.feed('."}') == "."
    result = extractor.finish()
    assert (result.remainder, result.answer, result.supporting) == ("", "  Yes.", "the doc says so")


def test_prose_switches_to_raw_at_first_character() -> None:
    extractor = AnswerStreamExtractor()
    assert extractor.feed("\n ") == ""
    assert extractor.feed("```json\n") == ""
    assert extractor.feed(" Paris") == "\n ```json\n Paris"
    assert extractor.feed(" is") == " is"
    assert extractor.finish() == StreamResult("", "\n ```json\n Paris is", None, "raw", "not_json")


def test_object_without_answer_is_forwarded_when_it_closes() -> None:
    extractor = AnswerStreamExtractor()
    assert extractor.feed('{"result": "Paris"') == ""
    assert extractor.feed("}\nmore") == '{"result": "Paris"}\nmore'
    assert extractor.feed("!") == "!"
    assert extractor.finish() == StreamResult("", '{"result": "Paris"}\nmore!', None, "raw", "no_answer")


def test_object_never_finished_without_answer_is_forwarded_at_finish() -> None:
    extractor = AnswerStreamExtractor()
    assert extractor.feed('{"reasoning": "long') == ""
    result = extractor.finish(truncated=True)
    assert result == StreamResult('{"reasoning": "long', '{"reasoning": "long', None, "raw", "truncated")


def test_text_after_the_object_follows_the_answer() -> None:
    # Issue 13 #1: it was dropped before.  A closing fence and whitespace alone are part of the object.
    output, result, _ = run(['```json\n{"answer": "a", "support": "s"}', "\n```\nHope this helps"])
    assert (output, result.unscored_reason) == ("a\n```\nHope this helps", "text_after_json")
    output, result, _ = run(['```json\n{"answer": "a", "support": "s"}', "\n``", "`\n  \n"])
    assert (output, result.unscored_reason, result.supporting) == ("a", None, "s")


def test_feed_after_finish_is_an_error() -> None:
    extractor = AnswerStreamExtractor()
    extractor.finish()
    with pytest.raises(RuntimeError):
        extractor.feed("x")


# --- no per-piece work that grows with the reply so far -----------------------------------------------------


def _seconds_per_piece(pieces: list[str]) -> float:
    extractor = AnswerStreamExtractor()
    start = time.process_time()  # CPU time: less sensitive to other processes than wall time
    for piece in pieces:
        extractor.feed(piece)
    extractor.finish()
    return (time.process_time() - start) / len(pieces)


@pytest.mark.parametrize(
    "head",
    ['{"answer": "', '{"supporting_content": "', '{"x": ["', "plain text "],
    ids=["answer", "support_held", "skipped_value", "raw"],
)
def test_cost_per_piece_does_not_grow_with_the_reply(head: str) -> None:
    # A loose structural check, not a benchmark: work that re-scans the text so far would make a piece of a
    # 40,000-piece reply ~20x dearer than one of a 2,000-piece reply; linear work keeps the ratio near 1.
    # Best of interleaved runs, so a burst of load elsewhere does not decide the outcome.
    small_pieces = [head] + ["ab\\n "] * 2_000
    large_pieces = [head] + ["ab\\n "] * 40_000
    small = large = float("inf")
    for _ in range(3):
        small = min(small, _seconds_per_piece(small_pieces))
        large = min(large, _seconds_per_piece(large_pieces))
    assert large < 5 * small, (small, large)


@pytest.mark.parametrize("text", ["```python 0{", "```python\tsample {", "``` json x{"])
def test_a_brace_after_a_two_word_fence_info_is_not_the_object(text: str) -> None:
    """Found by the property test above: "```python 0{" read the "{" of the fence's info line as ragtap's object
    (unscored_reason incomplete_json).  A one-word info string followed by "{" still is ("```json {")."""
    output, result, _ = run([text], truncated=False)
    assert (output, result.mode, result.unscored_reason) == (text, "raw", "not_json")
    assert split_reply('```json {"answer": "a", "supporting_content": "b"}```').answer == "a"
