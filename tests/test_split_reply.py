"""Examples for `split_reply`: the non-streamed split of an injected reply."""

from __future__ import annotations

import json

import pytest

from ragtap.split import REASONS, split_reply
from ragtap.split.stream import extract
from ragtap.types import SplitReply


def ok(answer: str, supporting: str | None, reason: str | None = None) -> SplitReply:
    return SplitReply(answer=answer, supporting=supporting, recovered=True, unscored_reason=reason)


def raw(text: str, reason: str) -> SplitReply:
    return SplitReply(answer=text, supporting=None, recovered=False, unscored_reason=reason)


CLEAN = '{"answer": "Paris.", "supporting_content": "Paris is the capital of France."}'

CASES: list[tuple[str, str, bool, SplitReply]] = [
    # (id, content, truncated, expected)
    ("clean", CLEAN, False, ok("Paris.", "Paris is the capital of France.")),
    ("compact", '{"answer":"a","supporting_content":"s"}', False, ok("a", "s")),
    ("pretty", json.dumps({"answer": "a", "supporting_content": "s"}, indent=2), False, ok("a", "s")),
    ("fenced_json", f"```json\n{CLEAN}\n```", False, ok("Paris.", "Paris is the capital of France.")),
    ("fenced_bare", f"```\n{CLEAN}\n```\n", False, ok("Paris.", "Paris is the capital of France.")),
    ("fence_same_line", '```json{"answer": "a", "support": "s"}```', False, ok("a", "s")),
    ("leading_ws", f"\n\n  {CLEAN}  \n", False, ok("Paris.", "Paris is the capital of France.")),
    # One rule (issue 13 #1): prose around the object means the upstream's text, unchanged (these three were
    # recovered from inside the prose before).
    ("prose_before", f"Sure! Here is the JSON:\n{CLEAN}", False, raw(f"Sure! Here is the JSON:\n{CLEAN}", "not_json")),
    (
        "prose_and_fence",
        f"Here you go:\n```json\n{CLEAN}\n```\nLet me know if you need more.",
        False,
        raw(f"Here you go:\n```json\n{CLEAN}\n```\nLet me know if you need more.", "not_json"),
    ),
    ("prose_after", CLEAN + "\n\nI hope this helps!", False, raw(CLEAN + "\n\nI hope this helps!", "text_after_json")),
    ("fence_then_prose", f"```json\n{CLEAN}\n```\nNote: x", False, raw(f"```json\n{CLEAN}\n```\nNote: x", "text_after_json")),
    ("reordered", '{"supporting_content": "s", "answer": "a"}', False, ok("a", "s")),
    (
        "extra_keys",
        '{"confidence": 0.9, "sources": [1, {"x": "}]"}], "answer": "a", "note": null, "supporting_content": "s",'
        ' "ok": true}',
        False,
        ok("a", "s"),
    ),
    ("key_supporting", '{"answer": "a", "supporting": "s"}', False, ok("a", "s")),
    ("key_supporting_document", '{"answer": "a", "supporting_document": "s"}', False, ok("a", "s")),
    ("key_support", '{"answer": "a", "support": "s"}', False, ok("a", "s")),
    ("key_camel", '{"Answer": "a", "supportingContent": "s"}', False, ok("a", "s")),
    ("duplicate_first_wins", '{"answer": "a", "answer": "b", "support": "s"}', False, ok("a", "s")),
    # Only a string is the answer (issue 13 #1; numbers, booleans and string lists were stringified before).
    ("answer_number", '{"answer": 42, "supporting_content": "s"}', False, raw('{"answer": 42, "supporting_content": "s"}', "answer_not_string")),
    ("answer_bool", '{"answer": true, "supporting_content": "s"}', False, raw('{"answer": true, "supporting_content": "s"}', "answer_not_string")),
    (
        "answer_string_list",
        '{"answer": ["one", "two"], "supporting_content": "s"}',
        False,
        raw('{"answer": ["one", "two"], "supporting_content": "s"}', "answer_not_string"),
    ),
    ("support_string_list", '{"answer": "a", "supporting_content": ["q1", "q2"]}', False, ok("a", "q1\nq2")),
    (
        "answer_null",
        '{"answer": null, "supporting_content": "s"}',
        False,
        raw('{"answer": null, "supporting_content": "s"}', "answer_not_string"),
    ),
    (
        "answer_object",
        '{"answer": {"text": "a"}, "supporting_content": "s"}',
        False,
        raw('{"answer": {"text": "a"}, "supporting_content": "s"}', "answer_not_string"),
    ),
    ("support_null", '{"answer": "a", "supporting_content": null}', False, ok("a", None, "no_supporting")),
    ("support_object", '{"answer": "a", "supporting_content": {"x": 1}}', False, ok("a", None, "supporting_not_string")),
    ("no_support_key", '{"answer": "a"}', False, ok("a", None, "no_supporting")),
    ("empty_support", '{"answer": "a", "supporting_content": ""}', False, ok("a", "")),
    ("empty_answer", '{"answer": "", "supporting_content": "s"}', False, ok("", "s", "empty_answer")),
    ("blank_answer", '{"answer": " \\n", "supporting_content": "s"}', False, ok(" \n", "s", "empty_answer")),
    ("no_answer_key", '{"result": "a", "supporting_content": "s"}', False, raw('{"result": "a", "supporting_content": "s"}', "no_answer")),
    # A nested answer is not the answer (issue 13 #1; it was taken from inside the wrapper before).
    ("wrapped_object", '{"data": {"answer": "a", "supporting_content": "s"}}', False, raw('{"data": {"answer": "a", "supporting_content": "s"}}', "no_answer")),
    ("trailing_comma", '{"answer": "a", "supporting_content": "s",}', False, ok("a", "s")),
    ("missing_brace", '{"answer": "a", "supporting_content": "s"', False, ok("a", "s")),
    # Not a JSON object: unchanged (issue 13 #1; the answer was taken before).  A stream has forwarded "a" by then.
    ("garbage_after_answer", '{"answer": "a" oops', False, raw('{"answer": "a" oops', "invalid_json")),
    ("mismatched_brackets", '{"x": [1}, "answer": "a"}', False, raw('{"x": [1}, "answer": "a"}', "invalid_json")),
    ("bad_scalar", '{"x": 1:2, "answer": "a"}', False, raw('{"x": 1:2, "answer": "a"}', "invalid_json")),
    ("single_quotes", "{'answer': 'a'}", False, raw("{'answer': 'a'}", "invalid_json")),
    ("curly_prose", "{curly} braces are fine", False, raw("{curly} braces are fine", "invalid_json")),
    # truncation (finish_reason "length")
    ("truncated_in_support", '{"answer": "a", "supporting_content": "Paris is', True, ok("a", "Paris is", "truncated")),
    ("truncated_before_support", '{"answer": "a", "supp', True, ok("a", None, "truncated")),
    ("truncated_after_answer", '{"answer": "a",', True, ok("a", None, "truncated")),
    ("truncated_in_answer", '{"answer": "The capital is Par', True, ok("The capital is Par", None, "truncated")),
    ("truncated_in_escape", '{"answer": "caf\\u00', True, ok("caf", None, "truncated")),
    ("truncated_in_pair", '{"answer": "smile \\ud83d', True, ok("smile ", None, "truncated")),
    ("truncated_blank_answer", '{"answer": "  ', True, raw('{"answer": "  ', "truncated")),
    ("truncated_before_answer", '{"supporting_content": "s", "ans', True, raw('{"supporting_content": "s", "ans', "truncated")),
    ("truncated_in_fence", "```js", True, raw("```js", "truncated")),
    ("truncated_complete", CLEAN, True, ok("Paris.", "Paris is the capital of France.")),
    ("ended_in_support", '{"answer": "a", "supporting_content": "Par', False, ok("a", "Par", "incomplete_json")),
    ("ended_in_answer", '{"answer": "Par', False, ok("Par", None, "incomplete_json")),
    # not JSON at all
    ("plain_text", "Paris is the capital of France.", False, raw("Paris is the capital of France.", "not_json")),
    ("json_string", '"Paris"', False, raw('"Paris"', "not_json")),
    ("json_array", '["Paris"]', False, raw('["Paris"]', "not_json")),
    ("fenced_python", "```python\nprint(1)\n```", False, raw("```python\nprint(1)\n```", "not_json")),
    ("empty", "", False, raw("", "empty")),
    ("whitespace", " \n\t", False, raw(" \n\t", "empty")),
    # unicode and escapes
    ("unicode_raw", '{"answer": "Zürich 😀 東京", "supporting_content": "ß"}', False, ok("Zürich 😀 東京", "ß")),
    (
        "unicode_escaped",
        json.dumps({"answer": "Zürich 😀 東京", "supporting_content": "ß"}),
        False,
        ok("Zürich 😀 東京", "ß"),
    ),
    (
        "nested_quotes",
        json.dumps({"answer": 'He said "no" \\ {"answer": "x"}', "supporting_content": 'a "b"'}),
        False,
        ok('He said "no" \\ {"answer": "x"}', 'a "b"'),
    ),
    ("all_escapes", r'{"answer": "\" \\ \/ \b \f \n \r \t \u0041"}', False, ok('" \\ / \b \f \n \r \t A', None, "no_supporting")),
    ("lone_high", r'{"answer": "a\ud800b", "support": "s"}', False, ok("a\ufffdb", "s")),
    ("lone_low", r'{"answer": "a\udc00", "support": "s"}', False, ok("a\ufffd", "s")),
    ("high_high_low", r'{"answer": "\ud800\ud83d\ude00", "support": "s"}', False, ok("\ufffd😀", "s")),
    ("apostrophe_escape", r'{"answer": "it\'s", "support": "s"}', False, ok("it's", "s")),
    ("unknown_escape", r'{"answer": "a\qb", "support": "s"}', False, ok("a\\qb", "s")),
    ("bad_unicode_escape", r'{"answer": "a\u12g", "support": "s"}', False, ok("a\\u12g", "s")),
    ("raw_newline_in_string", '{"answer": "line1\nline2", "support": "s"}', False, ok("line1\nline2", "s")),
]


@pytest.mark.parametrize(("content", "truncated", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_split_reply(content: str, truncated: bool, expected: SplitReply) -> None:
    assert split_reply(content, truncated=truncated) == expected


def test_none_content() -> None:
    assert split_reply(None) == SplitReply(answer="", supporting=None, recovered=False, unscored_reason="empty")


@pytest.mark.parametrize(("content", "truncated", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reasons_are_from_the_fixed_set(content: str, truncated: bool, expected: SplitReply) -> None:
    reason = split_reply(content, truncated=truncated).unscored_reason
    assert reason is None or reason in REASONS


@pytest.mark.parametrize(("content", "truncated", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_agrees_with_stream_when_the_stream_recovers(content: str, truncated: bool, expected: SplitReply) -> None:
    streamed = extract(content, truncated=truncated)
    # (where the stream had forwarded the answer before the reply proved not to be one clean object, a whole
    # reply is given back unchanged instead)
    if streamed.mode == "json" and not streamed.syntax_error and streamed.unscored_reason != "text_after_json":
        assert split_reply(content, truncated=truncated) == streamed.to_split_reply()


def test_unrecovered_answer_is_upstream_text() -> None:
    for _, content, truncated, _ in CASES:
        result = split_reply(content, truncated=truncated)
        if not result.recovered:
            assert result.answer == content
            assert result.supporting is None


# --- the fast path for replies exactly as instructed (issue 23): the same split as the extractor --------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragtap.split.reply import _as_instructed, split_by_extractor  # noqa: E402


@st.composite
def instructed_replies(draw):  # type: ignore[no-untyped-def]
    """Replies in the instructed shape, written as JSON encoders and models write them: any text (escapes, quotes,
    backslashes, non-ASCII, control characters), ASCII-escaped or not, compact or indented, either key first,
    JSON whitespace around; and near misses (blank or space-led answers, a third key, a repeated key)."""
    answer = draw(st.one_of(st.text(min_size=1), st.sampled_from(["Paris.", " lead", "\n", "   ", "\u00a0x", 'say "answer"'])))
    supporting = draw(st.one_of(st.text(), st.sampled_from(["", '"supporting_content"', "\\u0041"])))
    pairs = [("answer", answer), ("supporting_content", supporting)]
    if draw(st.booleans()):
        pairs.reverse()
    extra = draw(st.sampled_from([None, ("note", "x"), ("answer", "second"), ("Answer", "other"), ("support", "s")]))
    if extra is not None:
        pairs.insert(draw(st.integers(0, 2)), extra)
    ascii_only = draw(st.booleans())
    indent = draw(st.sampled_from([None, 2]))
    body = "{" + ("," if indent is None else ",\n  ").join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=ascii_only)}" for k, v in pairs) + "}"
    if indent is not None:
        body = body.replace("{", "{\n  ", 1)[:-1] + "\n}"
    space = st.text(alphabet=" \t\n\r", max_size=3)
    return draw(space) + body + draw(space)


@settings(max_examples=400, deadline=None)
@given(instructed_replies())
def test_the_fast_path_splits_as_the_extractor_does(reply: str) -> None:
    """Fails if `_as_instructed` ever disagrees with the extractor (the one rule) on a reply it accepts."""
    fast = _as_instructed(reply)
    if fast is not None:
        assert fast == split_by_extractor(reply)
    assert split_reply(reply) == split_by_extractor(reply)


def test_the_fast_path_takes_the_instructed_reply_and_leaves_the_rest() -> None:
    assert _as_instructed(CLEAN) == ok("Paris.", "Paris is the capital of France.")
    for content, _, truncated, expected in [(c[1], c[0], c[2], c[3]) for c in CASES]:
        assert split_reply(content, truncated=truncated) == expected  # every hand-written case, through both paths
    for near_miss in ['{"answer": "a", "supporting_content": "s", "answer": "b"}', '{"answer": " a", "supporting_content": "s"}',
                      '{"answer": "a", "supporting_content": "s",}', '```json\n{"answer": "a", "supporting_content": "s"}\n```',
                      '{"answer": "a", "supporting_content": null}', '{"answer": "\\ud800", "supporting_content": "s"}']:
        assert _as_instructed(near_miss) is None, near_miss
