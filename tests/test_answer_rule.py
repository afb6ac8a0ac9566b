"""Issue 13 #1 over real HTTP (openai SDK -> ragtap -> scripted upstream), streamed and not: one answer-extraction
rule.  Only the top-level `answer` string of a top-level JSON object is the answer; anything else reaches the app as
the upstream wrote it.  The non-streamed cases failed on the previous code (the splitter took the first `answer`
found at any depth, or inside prose, and dropped text after the object); the streamed ones already held except
text after the object, which the stream dropped."""

from __future__ import annotations

import pytest

from conftest import explicit, fixed, rag_messages

MODEL = "gpt-4o-mini"
WARNING = "IMPORTANT: do not take this dose with alcohol."
WITH_WARNING = '{"answer":"Yes.","supporting_content":"The leaflet allows two tablets a day."}\n\n' + WARNING

UNCHANGED = [
    # (id, the upstream's content, the unscored reason)
    ("nested_answer_in_citations", '{"final_answer":"Paris is the capital of France.","citations":[{"answer":"Lyon"}]}', "no_answer"),
    ("foreign_keys_nested_example", '{"respuesta":"Madrid.","ejemplo":{"answer":"N/A"}}', "no_answer"),
    ("object_inside_prose", 'The model replied {"answer": "Berlin is the capital.", "score": 0.9} as its best guess.', "not_json"),
    ("null_answer", '{"answer": null, "supporting_content": "The capital is Paris."}', "answer_not_string"),
    ("object_answer", '{"answer": {"text": "Paris"}, "supporting_content": "The capital is Paris."}', "answer_not_string"),
    ("number_answer", '{"answer": 42, "supporting_content": "six times seven"}', "answer_not_string"),
]


async def _ask(proxy, stream: bool) -> str:  # type: ignore[no-untyped-def]
    if not stream:
        completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
        return completion.choices[0].message.content or ""
    text = ""
    async for chunk in await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
    return text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("content", "reason"), [c[1:] for c in UNCHANGED], ids=[c[0] for c in UNCHANGED])
async def test_anything_but_a_top_level_answer_string_reaches_the_app_unchanged(start_proxy, content: str, reason: str, stream: bool) -> None:
    proxy = await start_proxy(fixed(content))
    assert await _ask(proxy, stream) == content
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == (content, None, reason)


async def test_text_after_the_object_is_not_dropped_non_streamed(start_proxy) -> None:
    proxy = await start_proxy(fixed(WITH_WARNING))
    assert await _ask(proxy, False) == WITH_WARNING  # the whole reply, unchanged (was "Yes.")
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.supporting, interaction.unscored_reason) == (None, "text_after_json")


async def test_text_after_the_object_follows_the_streamed_answer(start_proxy) -> None:
    # A stream has forwarded "Yes." before the warning arrives: the warning follows it (it was dropped).
    proxy = await start_proxy(fixed(WITH_WARNING))
    assert await _ask(proxy, True) == "Yes.\n\n" + WARNING
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.unscored_reason) == ("Yes.\n\n" + WARNING, "text_after_json")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_fenced_top_level_answer_is_still_split(start_proxy, stream: bool) -> None:
    content = '```json\n{"answer": "Paris.", "supporting_content": "Paris is the capital of France."}\n```\n'
    proxy = await start_proxy(fixed(content))
    assert await _ask(proxy, stream) == "Paris."
    interaction, _ = await proxy.collector.assessment()
    assert (interaction.answer, interaction.supporting, interaction.unscored_reason) == ("Paris.", "Paris is the capital of France.", None)
