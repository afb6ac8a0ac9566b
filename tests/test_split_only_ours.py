"""Issue 24 #3, the splitter's half: a follow-up turn (not injected) is split only when the model wrote ragtap's own
object -- an answer and a supporting content, nothing else, in any key order -- and any other JSON (the app asked
for fields of its own) reaches the app as the model wrote it.  Streamed in any cut, the same as whole."""

from __future__ import annotations

import json

import pytest

from ragtap.split.stream import OTHER_JSON, AnswerStreamExtractor, extract

OURS = json.dumps({"answer": "No.", "supporting_content": "The APIs remain the same."})
CASES = [
    (OURS, "No.", None),
    (json.dumps({"supporting_content": "S", "answer": "No."}), "No.", None),  # any key order
    ("```json\n" + OURS + "\n```", "No.", None),
    (OURS + "\n\nAnything else?", "No.\n\nAnything else?", "text_after_json"),
    (json.dumps({"answer": "No.", "confidence": 0.9, "sources": ["ec2.md"]}), None, OTHER_JSON),
    (json.dumps({"confidence": 0.9, "answer": "No.", "supporting_content": "S"}), None, OTHER_JSON),
    (json.dumps({"answer": "42"}), None, OTHER_JSON),  # an answer alone is the app's format, not ragtap's
    ('{"answer": "a", "answer": "b", "supporting_content": "s"}', None, OTHER_JSON),
    (OURS[:25], None, "incomplete_json"),  # cut before the object closed: not known to be ragtap's
    ("Plain prose.", None, "not_json"),
]


@pytest.mark.parametrize(("text", "answer", "reason"), CASES)
def test_only_ragtaps_object_is_split_the_same_whole_and_streamed(text: str, answer: str | None, reason: str | None) -> None:
    whole = extract(text, only_ours=True)
    assert whole.answer == (text if answer is None else answer) and whole.unscored_reason == reason
    for step in range(1, 12):
        extractor = AnswerStreamExtractor(only_ours=True)
        streamed = "".join(extractor.feed(text[i : i + step]) for i in range(0, len(text), step))
        result = extractor.finish()
        assert streamed + result.remainder == result.answer == whole.answer, step


def test_an_injected_reply_still_splits_with_keys_of_its_own() -> None:
    """Where ragtap asked for JSON (not `only_ours`), extra keys are the model's sloppiness: the answer is split."""
    assert extract(json.dumps({"answer": "No.", "confidence": 0.9, "supporting_content": "S"})).answer == "No."
