"""The Responses reply splitter on its own: whole response objects and typed stream events, any cut."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtap.split import split_reply
from ragtap.split.responses import ClientEcho, split_response
from ragtap.split.responses_stream import ResponsesStreamSplitter
from ragtap.testing.responses_wire import ResponsesWire
from ragtap.testing.upstream import ScriptedReply, json_reply

REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "status": "completed"}
INJECTED_BODY = {"model": "m", "instructions": "Own.\n\n...supporting_content...", "text": {"format": {"type": "json_object"}}}
ECHO = ClientEcho("Own.", None)
CONTENTS = [
    json_reply("Line one.\nLine \"two\" \u00e9\U0001f600", "Support \\ here."),
    "```json\n" + json_reply("Fenced.", "S") + "\n```",
    "Prose, the model ignored the instruction.",
    '{"answer": "cut in the mid',
    '{"supporting_content": "first", "answer": "second"}',
]


def _stream(content: str, piece_chars: int, finish: str = "stop") -> list[dict]:
    reply = ScriptedReply(content, piece_chars=piece_chars, finish_reason=finish, output_prefix=(REASONING,))
    return ResponsesWire(INJECTED_BODY, reply, 1).events()


@pytest.mark.parametrize("content", CONTENTS)
def test_stream_and_whole_agree_for_every_cut(content: str) -> None:
    finish = "length" if content.endswith("mid") else "stop"
    whole = ResponsesWire(INJECTED_BODY, ScriptedReply(content, finish_reason=finish, output_prefix=(REASONING,)), 1).response()
    split = split_response(whole, ECHO)
    assert split is not None and split == split_reply(content, truncated=finish == "length")
    for piece_chars in (1, 2, 3, 5, 8, 1000):
        splitter = ResponsesStreamSplitter(ECHO)
        out = [e for event in _stream(content, piece_chars, finish) for e in splitter.feed(copy.deepcopy(event))]
        out += splitter.close()
        deltas = "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta")
        assert deltas == split.answer, piece_chars
        assert [e["sequence_number"] for e in out] == list(range(len(out)))
        done = next(e for e in out if e["type"] == "response.output_text.done")
        part_done = next(e for e in out if e["type"] == "response.content_part.done")
        item_done = [e for e in out if e["type"] == "response.output_item.done"][-1]
        final = out[-1]["response"]
        assert done["text"] == part_done["part"]["text"] == item_done["item"]["content"][0]["text"] == split.answer
        assert final["output"][1]["content"][0]["text"] == split.answer and final["output"][0] == REASONING
        assert {**final, "created_at": 0} == {**whole, "created_at": 0}  # the final object is the whole reply, split the same way
        assert splitter.outcome().to_split_reply() == split
        for event in out:
            if "response" in event:
                assert event["response"]["instructions"] == "Own." and event["response"]["text"]["format"] == {"type": "text"}


def test_events_of_other_items_pass_unchanged() -> None:
    splitter = ResponsesStreamSplitter(ECHO)
    unknown = {"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0, "sequence_number": 0}
    assert splitter.feed(dict(unknown)) == [unknown]
    other_delta = {"type": "response.output_text.delta", "item_id": "msg_other", "content_index": 0, "delta": "{x", "sequence_number": 1}
    assert splitter.feed(dict(other_delta)) == [other_delta]


def test_a_whole_reply_without_text_keeps_its_output() -> None:
    body = dict(INJECTED_BODY)
    reply = ResponsesWire(body, ScriptedReply(tool_calls=[{"id": "call_1", "function": {"name": "f", "arguments": "{}"}}]), 1).response()
    before = json.dumps(reply["output"])
    assert split_response(reply, ECHO) is None
    assert json.dumps(reply["output"]) == before and reply["instructions"] == "Own."


def test_an_upstream_without_item_and_part_events_is_still_split() -> None:
    """Some OpenAI-compatible servers send the text events without `output_item.added` / `content_part.added`."""
    content = json_reply("The answer.", "The support.")
    skipped = {"response.output_item.added", "response.content_part.added"}
    splitter = ResponsesStreamSplitter(ECHO)
    out = [e for event in _stream(content, 3) if event["type"] not in skipped for e in splitter.feed(event)]
    assert "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta") == "The answer."
    assert out[-1]["response"]["output"][1]["content"][0]["text"] == "The answer."
    assert splitter.outcome().supporting == "The support."


def test_output_text_convenience_field_is_rebuilt_when_present() -> None:
    reply = ResponsesWire(INJECTED_BODY, ScriptedReply(json_reply("Answer.", "Support.")), 1).response()
    reply["output_text"] = reply["output"][0]["content"][0]["text"]  # some servers and SDK dumps carry it
    split = split_response(reply, ECHO)
    assert split is not None and reply["output_text"] == "Answer." and reply["output"][0]["content"][0]["text"] == "Answer."
    assert reply["text"] == {"format": {"type": "text"}, "verbosity": "medium"}



def test_an_object_inside_prose_is_never_split() -> None:
    # The one answer rule (issue 13 #1): only a top-level `answer` of a top-level object counts.
    prose = 'Use this shape: {"answer": "x", "supporting_content": "y"} and you are done.'
    asked = ResponsesWire(INJECTED_BODY, ScriptedReply(prose), 1).response()
    assert split_response(asked, ECHO).answer == prose and asked["output"][0]["content"][0]["text"] == prose
    not_asked = ResponsesWire(INJECTED_BODY, ScriptedReply(prose), 1).response()
    split = split_response(not_asked, ECHO, embedded=False)
    assert split.answer == prose and not_asked["output"][0]["content"][0]["text"] == prose


_TEXTS = st.one_of(
    st.text(max_size=60),
    st.builds(json_reply, st.text(max_size=40), st.text(max_size=40)),
    st.builds(lambda a, s: "```json\n" + json_reply(a, s) + "\n```", st.text(max_size=30), st.text(max_size=30)),
    st.builds(lambda a, cut: json_reply(a, "support")[:cut], st.text(max_size=30), st.integers(0, 60)),
)


@settings(max_examples=200, deadline=None)
@given(content=_TEXTS, piece_chars=st.integers(1, 12), truncated=st.booleans())
def test_any_reply_cut_anyhow_streams_what_the_whole_split_gives(content: str, piece_chars: int, truncated: bool) -> None:
    finish = "length" if truncated else "stop"
    whole = ResponsesWire(INJECTED_BODY, ScriptedReply(content, finish_reason=finish), 1).response()
    split = split_response(whole, ECHO, embedded=False)
    assert split is not None
    splitter = ResponsesStreamSplitter(ECHO, only_ours=True)  # the same reading, streamed
    out = [e for event in _stream(content, piece_chars, finish) for e in splitter.feed(event)] + splitter.close()
    assert "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta") == split.answer
    assert out[-1]["response"]["output"][1]["content"][0]["text"] == split.answer
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    outcome = splitter.outcome()
    assert (outcome.answer, outcome.supporting) == (split.answer, split.supporting)
