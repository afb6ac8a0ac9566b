"""Issue 2, the core proxy, over real HTTP: the openai SDK -> ragtap (RagtapServer) -> the scripted upstream.

Non-streamed requests: explicit and implicit RAG recognition, injection, splitting of the reply (clean and
broken), byte-for-byte passthrough of everything else, client-owned reply formats, upstream errors and timeouts,
debug headers, and scoring that arrives afterwards through the exporters.
"""

from __future__ import annotations

import asyncio
import gc
import json

import aiohttp
import openai
import pytest

from ragtap.prompts import prompt_text
from ragtap.proxy.exchange_path import Exchange
from ragtap.testing.upstream import ScriptedReply, was_injected
from ragtap.types import Verdict

from framework_templates import LLAMAINDEX_QA_SYSTEM, LLAMAINDEX_TEXT_QA, RLM_RAG_PROMPT
from conftest import ANSWER, DOCUMENTS, QUESTION, SUPPORTING, explicit, fixed, free_port, json_content, rag_messages

MODEL = "gpt-4o-mini"


def injected_instruction() -> str:
    return prompt_text("supporting_content")


def assert_injected(body: dict, client_messages: list[dict]) -> None:
    """The upstream got the app's messages unchanged, then ragtap's instruction, and json_object; no `ragtap`."""
    assert "ragtap" not in body
    assert body["messages"][: len(client_messages)] == client_messages
    assert body["messages"][len(client_messages):] == [{"role": "system", "content": injected_instruction()}]
    assert body["response_format"] == {"type": "json_object"}


def assert_not_injected(body: dict) -> None:
    assert "ragtap" not in body
    assert not was_injected(body)
    assert all(m.get("content") != injected_instruction() for m in body["messages"])


# --------------------------------------------------------------------------------------------------------------
# 1. explicit RAG, non-streamed
# --------------------------------------------------------------------------------------------------------------


async def test_explicit_rag_app_gets_only_the_answer_and_scores_follow(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(json_content(), headers={"x-request-id": "req-123"}, prompt_tokens=321, completion_tokens=45)))
    messages = rag_messages()
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, temperature=0.2, extra_body=explicit())
    completion = raw.parse()

    # The app receives exactly the answer; everything else of the upstream's completion is preserved.
    upstream_completion = json.loads(proxy.upstream.sent[-1])
    assert completion.choices[0].message.content == ANSWER
    assert completion.id == upstream_completion["id"]
    assert completion.model == upstream_completion["model"] == MODEL
    assert completion.created == upstream_completion["created"]
    assert completion.system_fingerprint == "fp_scripted"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.role == "assistant"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (321, 45, 366)
    assert raw.headers["x-request-id"] == "req-123"  # the upstream's own headers come back
    assert "content-length" in raw.headers and int(raw.headers["content-length"]) == len(raw.http_response.content)

    # The upstream received the injected instruction and json_object, not the `ragtap` field; the rest unchanged.
    body = proxy.upstream_body()
    assert_injected(body, messages)
    assert body["model"] == MODEL and body["temperature"] == 0.2
    assert proxy.upstream.requests[-1].headers["Authorization"] == "Bearer sk-test-key"

    # Scores and a verdict arrive afterwards, off the response path.
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.question == QUESTION
    assert [d.text for d in interaction.documents] == DOCUMENTS
    assert interaction.answer == ANSWER and interaction.supporting == SUPPORTING
    assert interaction.id == completion.id and interaction.model == MODEL
    assert assessment.verdict is Verdict.GROUNDED
    assert assessment.poor_retrieval is False
    assert all(assessment.scores.as_dict()[m] is not None for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard"))

    record = await proxy.collector.exchange(1)
    assert record.injected and record.rag_source == "explicit" and record.outcome == "complete"
    assert (record.status, record.response_id, record.input_tokens, record.output_tokens) == (200, completion.id, 321, 45)
    assert record.finish_reasons == ("stop",)


async def test_explicit_documents_as_objects_and_content_parts(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    messages = [{"role": "user", "content": [{"type": "text", "text": f"Context: {DOCUMENTS[0]}\nQuestion: {QUESTION}"}]}]
    extra = {"ragtap": {"question": QUESTION, "documents": [{"id": "doc-7", "text": DOCUMENTS[0]}]}}
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra)
    assert completion.choices[0].message.content == ANSWER
    assert_injected(proxy.upstream_body(), messages)
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.documents[0].id == "doc-7"
    assert assessment.scores.attributed_document == 0


async def test_ragtap_disabled_is_not_injected_and_the_field_is_stripped(start_proxy) -> None:
    proxy = await start_proxy()  # echo_script: plain text when not injected
    messages = rag_messages()
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=messages, extra_body={"ragtap": {"enabled": False}})
    assert completion.choices[0].message.content == "The answer."
    body = proxy.upstream_body()
    assert_not_injected(body)
    assert "response_format" not in body
    # Everything but the field is forwarded as the client sent it.
    sent = json.loads(proxy.client_bodies[-1])
    del sent["ragtap"]
    assert body == sent
    record = await proxy.collector.exchange(1)
    assert not record.injected and record.rag_source is None
    assert proxy.collector.scored == [] and proxy.server.state.scoring is not None and proxy.server.state.scoring.depth == 0


async def test_explicit_empty_documents_means_not_rag(start_proxy) -> None:
    proxy = await start_proxy()
    completion = await proxy.client.chat.completions.create(
        model=MODEL, messages=rag_messages(), extra_body={"ragtap": {"question": QUESTION, "documents": []}}
    )
    assert completion.choices[0].message.content == "The answer."
    assert_not_injected(proxy.upstream_body())


async def test_inject_disabled_in_config_observes_without_injecting(start_proxy) -> None:
    proxy = await start_proxy(flags={"inject": {"enabled": False}})
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert completion.choices[0].message.content == "The answer."
    assert_not_injected(proxy.upstream_body())
    _, assessment = await proxy.collector.assessment(1)
    assert assessment.scores.sdq is None and assessment.scores.qa is not None


# --------------------------------------------------------------------------------------------------------------
# 2. implicit RAG: the prompts of LangChain and LlamaIndex as they render them
# --------------------------------------------------------------------------------------------------------------

TWO_DOCS = [DOCUMENTS[0], "vcpu-based instance limits are available in all commercial aws regions"]


async def test_implicit_langchain_rag_prompt_is_injected(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    messages = [{"role": "user", "content": RLM_RAG_PROMPT.format(question=QUESTION, context="\n\n".join(TWO_DOCS))}]
    # LangChain sends "stream": false explicitly.
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=messages, stream=False, temperature=0.7)
    assert completion.choices[0].message.content == ANSWER
    assert_injected(proxy.upstream_body(), messages)
    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.question == QUESTION
    assert [d.text for d in interaction.documents] == TWO_DOCS
    assert assessment.verdict is Verdict.GROUNDED and assessment.scores.attributed_document == 0
    assert (await proxy.collector.exchange(1)).rag_source == "langchain"


async def test_implicit_llamaindex_text_qa_is_injected(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    nodes = [f"file_path: /data/faq/aws.txt\n\n{TWO_DOCS[0]}", f"file_path: /data/faq/limits.txt\n\n{TWO_DOCS[1]}"]
    messages = [
        {"role": "system", "content": LLAMAINDEX_QA_SYSTEM},
        {"role": "user", "content": LLAMAINDEX_TEXT_QA.format(context_str="\n\n".join(nodes), query_str=QUESTION)},
    ]
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=messages, temperature=0.1)
    assert completion.choices[0].message.content == ANSWER
    assert_injected(proxy.upstream_body(), messages)
    interaction, _ = await proxy.collector.assessment(1)
    assert interaction.question == QUESTION
    assert len(interaction.documents) == 2 and TWO_DOCS[0] in interaction.documents[0].text
    assert (await proxy.collector.exchange(1)).rag_source == "llamaindex_text_qa"


# --------------------------------------------------------------------------------------------------------------
# 3. broken replies: the app never gets a worse answer than the upstream gave
# --------------------------------------------------------------------------------------------------------------

_OBJ = json_content()
BROKEN = [
    # (case, upstream content, finish_reason, the app's answer, supporting recovered, unscored reason)
    ("code_fence", f"```json\n{_OBJ}\n```", "stop", ANSWER, SUPPORTING, None),
    # one rule (issue 13 #1): prose around the object means the upstream text, unchanged (it was recovered before)
    ("prose_around", f"Sure! Here is the JSON you asked for:\n{_OBJ}\nHope this helps.", "stop", f"Sure! Here is the JSON you asked for:\n{_OBJ}\nHope this helps.", None, "not_json"),
    ("reordered_keys", json.dumps({"supporting_content": SUPPORTING, "answer": ANSWER}), "stop", ANSWER, SUPPORTING, None),
    ("camel_case_key", json.dumps({"answer": ANSWER, "supportingContent": SUPPORTING}), "stop", ANSWER, SUPPORTING, None),
    ("truncated_in_support", _OBJ[: _OBJ.index(SUPPORTING) + 20], "length", ANSWER, SUPPORTING[:20], "truncated"),
    ("truncated_in_answer", _OBJ[: _OBJ.index(ANSWER) + 25], "length", ANSWER[:25], None, "truncated"),
    ("truncated_before_answer", '{"answer": "', "length", '{"answer": "', None, "truncated"),
    ("plain_text", "The nitro hypervisor keeps the same APIs.", "stop", "The nitro hypervisor keeps the same APIs.", None, "not_json"),
    ("no_answer_key", json.dumps({"response": ANSWER}), "stop", json.dumps({"response": ANSWER}), None, "no_answer"),
    ("answer_only", json.dumps({"answer": ANSWER}), "stop", ANSWER, None, "no_supporting"),
]


@pytest.mark.parametrize(("content", "finish", "answer", "supporting", "reason"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
async def test_broken_replies_give_the_recovered_answer_or_the_upstream_text(start_proxy, content, finish, answer, supporting, reason) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(content, finish_reason=finish)))
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    got = completion.choices[0].message.content
    assert got == answer
    assert completion.choices[0].finish_reason == finish
    assert got == content or got in content or ANSWER.startswith(got)  # never worse than what the upstream gave

    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.answer == answer
    assert interaction.supporting == supporting
    assert interaction.unscored_reason == reason
    if reason is None:
        assert assessment.verdict is not Verdict.UNSCORED
    else:
        assert assessment.verdict is Verdict.UNSCORED
        assert reason in assessment.explanation
        assert assessment.scores.qa is not None  # the scores that need no supporting content are still reported


async def test_reply_without_text_content_is_returned_untouched(start_proxy) -> None:
    """A content of null (a tool call or a refusal object): the completion goes back exactly as sent."""
    proxy = await start_proxy(fixed(ScriptedReply("")))
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert raw.parse().choices[0].message.content == ""
    interaction, assessment = await proxy.collector.assessment(1)
    assert assessment.verdict is Verdict.UNSCORED and interaction.unscored_reason == "empty"


async def test_upstream_rejecting_json_object_is_asked_again_without_it(start_proxy) -> None:
    def script(body: dict) -> ScriptedReply:
        if "response_format" in body:
            return ScriptedReply(status=400, error_body={"error": {"message": "response_format json_object is not supported", "type": "invalid_request_error", "param": "response_format", "code": None}})
        return ScriptedReply(json_content() if was_injected(body) else "plain")

    proxy = await start_proxy(script)
    completion = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert completion.choices[0].message.content == ANSWER
    assert len(proxy.upstream.requests) == 2
    assert "response_format" in proxy.upstream_body(0) and "response_format" not in proxy.upstream_body(1)
    assert was_injected(proxy.upstream_body(1))


# --------------------------------------------------------------------------------------------------------------
# 4. passthrough: non-RAG chat and other routes, byte for byte
# --------------------------------------------------------------------------------------------------------------


async def test_non_rag_chat_passes_through_byte_for_byte(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply("Paris is the capital of France.", headers={"x-ratelimit-remaining-requests": "99"})))
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is the capital of France?"}]
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, temperature=0, seed=7, user="u-1")
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]  # request bytes unchanged
    assert raw.http_response.content == proxy.upstream.sent[-1]  # response bytes unchanged
    assert raw.headers["x-ratelimit-remaining-requests"] == "99"
    assert raw.parse().choices[0].message.content == "Paris is the capital of France."
    assert_not_injected(proxy.upstream_body())
    record = await proxy.collector.exchange(1)
    assert record.rag_source is None and not record.injected
    assert proxy.collector.scored == []


async def test_models_and_embeddings_pass_through_byte_for_byte(start_proxy) -> None:
    proxy = await start_proxy()
    page = await proxy.client.models.with_raw_response.list()
    assert page.http_response.content == proxy.upstream.sent[-1]
    assert [m.id for m in page.parse().data] == ["scripted-model"]
    assert proxy.upstream.requests[-1].path == "/v1/models"

    raw = await proxy.client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["alpha", "beta gamma"])
    assert proxy.upstream.requests[-1].path == "/v1/embeddings"
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]
    assert raw.http_response.content == proxy.upstream.sent[-1]
    assert len(raw.parse().data) == 2

    await proxy.collector.wait_until(lambda: len(proxy.collector.passthrough) == 2, 5, "two passthrough records")
    assert [r.route for r in proxy.collector.passthrough] == ["/v1/models", "/v1/embeddings"]
    assert [r.status for r in proxy.collector.passthrough] == [200, 200]


async def test_non_json_chat_body_is_forwarded_unchanged(start_proxy) -> None:
    """A body ragtap cannot parse is the upstream's to judge; the upstream's answer comes back as is."""
    proxy = await start_proxy()
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{proxy.url}/v1/chat/completions", data=b"not json {", headers={"Content-Type": "application/json"}) as response:
            await response.read()
    assert proxy.upstream.requests[-1].raw == b"not json {"
    assert response.status == 500  # the scripted upstream fails on it; ragtap did not invent an answer
    record = await proxy.collector.exchange(1)
    assert record.rag_source is None and record.status == 500


# --------------------------------------------------------------------------------------------------------------
# 5. the client owns the reply format: not injected, forwarded unchanged, scored without supporting content
# --------------------------------------------------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
SCHEMA = {"type": "json_schema", "json_schema": {"name": "reply", "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}


@pytest.mark.parametrize(
    "extra",
    [{"response_format": SCHEMA}, {"response_format": {"type": "json_object"}}, {"tools": [WEATHER_TOOL]}, {"n": 2}],
    ids=["json_schema", "json_object", "tools", "n2"],
)
async def test_client_owned_format_is_forwarded_unchanged_and_scored_without_support(start_proxy, extra) -> None:
    proxy = await start_proxy(fixed(ANSWER))
    messages = [{"role": "user", "content": RLM_RAG_PROMPT.format(question=QUESTION, context=DOCUMENTS[0])}]
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, **extra)
    assert proxy.upstream.requests[-1].raw == proxy.client_bodies[-1]  # implicit RAG: the exact bytes
    assert raw.http_response.content == proxy.upstream.sent[-1]
    assert raw.parse().choices[0].message.content == ANSWER
    assert_not_injected(proxy.upstream_body())

    interaction, assessment = await proxy.collector.assessment(1)
    assert interaction.supporting is None and interaction.answer == ANSWER
    scores = assessment.scores
    assert scores.qrd is not None and scores.qa is not None and scores.ard is not None
    assert scores.sdq is None and scores.sdrd is None and scores.sda is None
    assert assessment.verdict is Verdict.GROUNDED  # judged on ARD without support
    assert not (await proxy.collector.exchange(1)).injected


async def test_client_owned_format_with_explicit_field_strips_only_the_field(start_proxy) -> None:
    proxy = await start_proxy(fixed(ANSWER))
    await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), response_format=SCHEMA, extra_body=explicit())
    sent = json.loads(proxy.client_bodies[-1])
    del sent["ragtap"]
    assert proxy.upstream_body() == sent
    _, assessment = await proxy.collector.assessment(1)
    assert assessment.scores.sdq is None and assessment.scores.qa is not None


# --------------------------------------------------------------------------------------------------------------
# 6. upstream errors and failures
# --------------------------------------------------------------------------------------------------------------

RATE_HEADERS = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "12ms", "retry-after": "1"}


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(400, openai.BadRequestError), (429, openai.RateLimitError), (500, openai.InternalServerError)],
)
@pytest.mark.parametrize("rag", [True, False], ids=["rag", "plain"])
async def test_upstream_errors_pass_through_with_status_body_and_headers(start_proxy, status, error_class, rag) -> None:
    error_body = {"error": {"message": f"scripted {status}", "type": "requests" if status == 429 else "server_error", "param": None, "code": f"code_{status}"}}
    proxy = await start_proxy(fixed(ScriptedReply(status=status, error_body=error_body, headers=RATE_HEADERS)))
    with pytest.raises(error_class) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), **({"extra_body": explicit()} if rag else {}))
    error = caught.value
    assert error.status_code == status
    assert error.response.content == proxy.upstream.sent[-1]
    assert error.body == error_body["error"]
    for name, value in RATE_HEADERS.items():
        assert error.response.headers[name] == value
    assert len(proxy.upstream.requests) == 1  # no retry of ragtap's own
    record = await proxy.collector.exchange(1)
    assert record.status == status
    assert proxy.collector.scored == []


async def test_streaming_request_with_upstream_error_gets_the_error(start_proxy) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(status=429, error_body={"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}, headers=RATE_HEADERS)))
    with pytest.raises(openai.RateLimitError) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=True, extra_body=explicit())
    assert caught.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert caught.value.body["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize("rag", [True, False], ids=["rag", "plain"])
async def test_closed_upstream_port_gives_an_openai_style_502(start_proxy, rag) -> None:
    proxy = await start_proxy(upstream_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(openai.APIStatusError) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), **({"extra_body": explicit()} if rag else {}))
    assert caught.value.status_code == 502
    assert caught.value.body["type"] == "upstream_error" and caught.value.body["code"] == "upstream_unreachable"
    record = await proxy.collector.exchange(1)
    assert record.outcome == "upstream_error" and record.status == 502

    with pytest.raises(openai.APIStatusError) as caught_models:
        await proxy.client.models.list()
    assert caught_models.value.status_code == 502


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_slow_upstream_beyond_the_read_timeout_gives_504(start_proxy, stream) -> None:
    proxy = await start_proxy(fixed(ScriptedReply(json_content(), delay_s=1.0)), flags={"server": {"read_timeout_s": 0.3}})
    with pytest.raises(openai.APIStatusError) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), stream=stream, extra_body=explicit())
    assert caught.value.status_code == 504
    assert caught.value.body["code"] == "upstream_timeout"
    record = await proxy.collector.exchange(1)
    assert record.outcome == "upstream_error" and record.error_type == "timeout"


# --------------------------------------------------------------------------------------------------------------
# 7. debug headers
# --------------------------------------------------------------------------------------------------------------


async def test_debug_headers_carry_verdict_and_scores(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), extra_headers={"x-ragtap-debug": "1"}
    )
    assert raw.parse().choices[0].message.content == ANSWER
    assert raw.headers["x-ragtap-verdict"] == "grounded"
    assert raw.headers["x-ragtap-poor-retrieval"] == "false"
    scores = json.loads(raw.headers["x-ragtap-scores"])
    assert set(scores) == {"sdq", "sdrd", "sda", "qrd", "qa", "ard"}
    assert all(0.0 <= v <= 1.0001 for v in scores.values())
    assert "x-ragtap-debug" not in {k.lower() for k in proxy.upstream.requests[-1].headers}  # ragtap's own header
    # The same assessment reaches the exporters.
    _, assessment = await proxy.collector.assessment(1)
    assert assessment.verdict.value == raw.headers["x-ragtap-verdict"]


async def test_debug_headers_for_an_unscored_reply(start_proxy) -> None:
    proxy = await start_proxy(fixed("just text"))
    raw = await proxy.client.chat.completions.with_raw_response.create(
        model=MODEL, messages=rag_messages(), extra_body=explicit(), extra_headers={"x-ragtap-debug": "1"}
    )
    assert raw.parse().choices[0].message.content == "just text"
    assert raw.headers["x-ragtap-verdict"] == "unscored"
    assert raw.headers["x-ragtap-unscored-reason"] == "not_json"


async def test_no_debug_headers_unless_asked(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert not [h for h in raw.headers if h.lower().startswith("x-ragtap-")]


async def test_base_url_without_v1(start_proxy) -> None:
    """Clients configured with a base URL that lacks /v1 reach the same chat handler."""
    proxy = await start_proxy(fixed(json_content()))
    client = openai.AsyncOpenAI(base_url=proxy.url, api_key="sk-test-key", max_retries=0, http_client=proxy.client._client)
    completion = await client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit())
    assert completion.choices[0].message.content == ANSWER
    assert proxy.upstream.requests[-1].path == "/v1/chat/completions"


async def test_request_body_over_the_limit_gets_an_openai_style_413(start_proxy) -> None:
    proxy = await start_proxy(flags={"server": {"max_body_bytes": 2000}})
    with pytest.raises(openai.APIStatusError) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x" * 5000}])
    assert caught.value.status_code == 413
    assert caught.value.body["code"] == "request_too_large"
    assert proxy.upstream.requests == []


async def test_observed_reply_without_content_length_is_still_scored(start_proxy) -> None:
    """An upstream that sends its JSON chunked (no Content-Length): the client-owned-format path must still read
    the answer for scoring, and the app must still get the bytes unchanged."""
    from aiohttp import web

    completion = {
        "id": "chatcmpl-chunked", "object": "chat.completion", "created": 1, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    payload = json.dumps(completion).encode()

    async def chunked(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for i in range(0, len(payload), 50):
            await response.write(payload[i : i + 50])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chunked)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        proxy = await start_proxy(upstream_url=f"http://127.0.0.1:{port}/v1")
        for extra in ({"response_format": {"type": "json_object"}}, {}):
            raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), **extra)
            if extra:
                assert raw.http_response.content == payload
            assert raw.parse().choices[0].message.content == ANSWER
        (observed, observed_assessment), (injected, _) = [await proxy.collector.assessment(n) for n in (1, 2)]
        assert observed.answer == ANSWER and observed.unscored_reason is None
        assert observed_assessment.scores.qa is not None
        assert injected.answer == ANSWER and injected.unscored_reason == "not_json"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("case", "extra", "script_reply"),
    [
        ("injected", {"extra_body": explicit()}, ScriptedReply(json_content())),
        ("client_format", {"extra_body": explicit(), "response_format": {"type": "json_object"}}, ScriptedReply(ANSWER)),
        ("ragtap_disabled", {"extra_body": {"ragtap": {"enabled": False}}}, ScriptedReply(ANSWER)),
        ("not_rag", {}, ScriptedReply(ANSWER)),
    ],
)
async def test_gzip_compressing_upstream(start_proxy, case, extra, script_reply) -> None:
    """Real upstreams gzip when the request allows it.  Whatever ragtap read (and decompressed) must not come back
    to the app labelled `Content-Encoding: gzip`; what it did not read comes back compressed, as sent."""
    proxy = await start_proxy(fixed(script_reply))
    proxy.upstream.compress = True
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), **extra)
    assert raw.parse().choices[0].message.content == ANSWER
    if case == "not_rag":  # passthrough: the upstream's bytes, still compressed
        assert raw.headers.get("content-encoding") in ("gzip", "deflate")
    else:  # ragtap reads these replies, so it asks for them uncompressed
        assert proxy.upstream.requests[-1].headers["Accept-Encoding"] == "identity"
    await proxy.collector.exchange(1)


@pytest.mark.parametrize(
    ("extra", "script_reply"),
    [
        ({"extra_body": explicit()}, ScriptedReply(json_content())),
        ({"extra_body": explicit(), "response_format": {"type": "json_object"}}, ScriptedReply(ANSWER)),
        ({"extra_body": {"ragtap": {"enabled": False}}}, ScriptedReply(ANSWER)),
        ({"extra_body": explicit()}, ScriptedReply(status=500, error_body={"error": {"message": ANSWER, "type": "server_error"}})),
    ],
    ids=["injected", "client_format", "ragtap_disabled", "injected_error"],
)
async def test_upstream_that_compresses_regardless(start_proxy, extra, script_reply) -> None:
    """Even an upstream that gzips against `Accept-Encoding: identity`: ragtap decoded the body, so it must not
    pass `Content-Encoding: gzip` on with it."""
    proxy = await start_proxy(fixed(script_reply))
    proxy.upstream.compress = "force"
    if script_reply.status == 200:
        raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=rag_messages(), **extra)
        assert raw.parse().choices[0].message.content == ANSWER
        assert "content-encoding" not in raw.headers
    else:
        with pytest.raises(openai.InternalServerError) as caught:
            await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), **extra)
        assert caught.value.body["message"] == ANSWER


@pytest.mark.parametrize("rag", [True, False], ids=["rag", "plain"])
async def test_gzip_compressed_upstream_error(start_proxy, rag) -> None:
    error_body = {"error": {"message": "too many", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    proxy = await start_proxy(fixed(ScriptedReply(status=429, error_body=error_body, headers=RATE_HEADERS)))
    proxy.upstream.compress = True
    with pytest.raises(openai.RateLimitError) as caught:
        await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), **({"extra_body": explicit()} if rag else {}))
    assert caught.value.body == error_body["error"]


async def test_unknown_route_passes_the_upstream_404_through(start_proxy) -> None:
    proxy = await start_proxy()
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{proxy.url}/v1/files?purpose=assistants&limit=2") as response:
            body = await response.read()
        async with session.get(f"http://127.0.0.1:{proxy.upstream.port}/v1/files?purpose=assistants&limit=2") as direct:
            direct_body = await direct.read()
    assert (response.status, body) == (direct.status, direct_body) == (404, direct_body)
    with pytest.raises(openai.NotFoundError):
        await proxy.client.files.list()
    await proxy.collector.wait_until(lambda: len(proxy.collector.passthrough) == 2, 5, "two passthrough records")
    assert proxy.collector.passthrough[0].route == "/v1/files" and proxy.collector.passthrough[0].status == 404


async def test_large_non_rag_reply_is_streamed_through_unchanged(start_proxy) -> None:
    """Bodies over 1 MiB are relayed piece by piece instead of read whole: the bytes must still be identical."""
    big = "lorem ipsum é 😀 " * 80_000  # ~1.6 MB of JSON
    proxy = await start_proxy(fixed(big))
    raw = await proxy.client.chat.completions.with_raw_response.create(model=MODEL, messages=[{"role": "user", "content": "Write a lot."}])
    assert len(proxy.upstream.sent[-1]) > 1 << 20
    assert raw.http_response.content == proxy.upstream.sent[-1]
    assert raw.parse().choices[0].message.content == big


# --------------------------------------------------------------------------------------------------------------
# memory: a finished exchange is freed by reference counting
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_finished_rag_exchange_is_freed_without_the_collector(start_proxy, stream) -> None:
    """Nothing of an injected exchange waits for the cyclic collector once its hooks have run: seam (c)'s closure
    (`exchange.ask_again`, which holds the exchange) is dropped when the route is done.  As cyclic garbage, every
    RAG request's exchange, aiohttp request and bodies were left to the collector (docs/benchmarks.md "Request
    path, fifth round")."""
    proxy = await start_proxy(fixed(ScriptedReply(json_content())))
    gc.collect()
    gc.disable()  # (a collection during the request would hide a cycle)
    try:
        reply = await proxy.client.chat.completions.create(model=MODEL, messages=rag_messages(), extra_body=explicit(), stream=stream)
        if stream:
            async for _ in reply:
                pass
        await proxy.collector.assessment(1)  # the exchange's hooks have run, and scoring after them
        await asyncio.sleep(0)
        left = [o for o in gc.get_objects() if isinstance(o, Exchange)]
    finally:
        gc.enable()
    assert left == []
