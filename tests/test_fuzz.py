"""Issue 7, fuzzing the HTTP path: hypothesis-generated upstream replies and client requests through the real proxy.

The recogniser, the reply splitter and the streaming extractor have their own property tests
(tests/test_recognise.py, tests/test_stream_extractor.py); here the same kinds of inputs go through the whole
HTTP path -- request parsing, recognition, injection, the upstream's JSON or SSE framing, the reply splitter or
the streaming relay, re-serialisation -- on one shared ragtap and upstream (a few dozen examples per property):

- whatever the model writes, the app's answer is what the splitter makes of the upstream's text (for a valid
  JSON reply: exactly its `answer`), streamed or not; a request ragtap does not rewrite gets the upstream's
  bytes unchanged;
- whatever the client sends, ragtap never answers 500 and never hangs, and never forwards its `ragtap` field.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtap.config import load_config
from ragtap.proxy.server import RagtapServer
from ragtap.split.reply import split_reply
from ragtap.split.stream import extract

from conftest import ENV, Collector
from test_reliability_faults import FaultUpstream, chat, request
from test_reliability_parts import answer_of

FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Shared:
    def __init__(self, upstream: FaultUpstream, server: RagtapServer, session: aiohttp.ClientSession) -> None:
        self.upstream, self.server, self.session = upstream, server, session

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def direct(self) -> str:
        return f"http://127.0.0.1:{self.upstream.port}"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def shared(embedder):  # type: ignore[no-untyped-def]
    async with FaultUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "read_timeout_s": 5.0, "shutdown_grace_s": 1.0},
                                                 "scoring": {"queue_size": 50}})
        async with RagtapServer(config, embedder=embedder, exporters=[Collector()]) as server:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
                yield Shared(upstream, server, session)


# --------------------------------------------------------------------------------------------------------------
# What the model writes
# --------------------------------------------------------------------------------------------------------------

_FRAGMENTS = ['{', '}', '"answer"', '"supporting_content"', '"support"', ':', ': ', '"', ',', ' ', '\n', '\\', '\\"', '\\n', '\\u00e9',
              '\\ud83d\\ude00', '\\ud800', '[', ']', 'null', 'true', '42', '1e400', '```json\n', '```', 'Sure! ', '"é😀"', '\t']

json_ish = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=8)), max_size=30).map("".join)


@st.composite
def json_replies(draw: st.DrawFn) -> tuple[str, str]:
    """(the model's text, its answer): a valid JSON object, in any key order, escaping, spacing or fence."""
    answer = draw(st.text(max_size=60))
    fields: dict[str, Any] = {"answer": answer, "supporting_content": draw(st.text(max_size=40))}
    if draw(st.booleans()):
        fields[draw(st.sampled_from(["confidence", "notes", "sources"]))] = draw(st.one_of(st.integers(), st.text(max_size=10), st.lists(st.text(max_size=5), max_size=3)))
    keys = draw(st.permutations(list(fields)))
    text = json.dumps({k: fields[k] for k in keys}, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2])))
    if draw(st.booleans()):
        text = "```json\n" + text + "\n```"
    return text, answer


replies = st.one_of(st.text(max_size=80), json_ish, json_replies().map(lambda pair: pair[0]))


@FUZZ
@given(reply=replies, piece_chars=st.integers(1, 12))
async def test_fuzzed_replies_nonstream_answer_is_what_the_splitter_gives(shared, reply, piece_chars) -> None:
    shared.upstream.content, shared.upstream.piece_chars = reply, piece_chars
    result = await request(shared.session, shared.url + "/v1/chat/completions", chat("rag"))
    assert await answer_of(result, False) == split_reply(reply).answer


@FUZZ
@given(reply=replies, piece_chars=st.integers(1, 12))
async def test_fuzzed_replies_stream_answer_is_what_the_extractor_gives(shared, reply, piece_chars) -> None:
    shared.upstream.content, shared.upstream.piece_chars = reply, piece_chars
    result = await request(shared.session, shared.url + "/v1/chat/completions", chat("rag", stream=True))
    assert result.body.endswith(b"data: [DONE]\n\n")
    assert await answer_of(result, True) == extract(reply).answer


@FUZZ
@given(pair=json_replies(), stream=st.booleans(), piece_chars=st.integers(1, 12))
async def test_fuzzed_json_replies_give_exactly_the_answer(shared, pair, stream, piece_chars) -> None:
    reply, answer = pair
    shared.upstream.content, shared.upstream.piece_chars = reply, piece_chars
    result = await request(shared.session, shared.url + "/v1/chat/completions", chat("rag", stream=stream))
    assert await answer_of(result, stream) == answer


@FUZZ
@given(reply=replies, stream=st.booleans(), client_format=st.booleans())
async def test_fuzzed_replies_not_rewritten_reach_the_app_byte_for_byte(shared, reply, stream, client_format) -> None:
    """Plain chat (forwarded untouched), and RAG with the client's own response_format (observed, not rewritten)."""
    shared.upstream.content = reply
    body = chat("rag", stream=stream, response_format={"type": "json_object"}) if client_format else chat("plain", stream=stream)
    via = await request(shared.session, shared.url + "/v1/chat/completions", body)
    forwarded = json.loads(shared.upstream.requests[-1].body)
    direct = await request(shared.session, shared.direct + "/v1/chat/completions", forwarded)
    if not stream:
        assert via.body == direct.body
    else:  # the stream's `created` differs between the two calls; everything else is identical
        assert await answer_of(via, True) == await answer_of(direct, True) == reply
        assert via.body.count(b"\n\n") == direct.body.count(b"\n\n")


# --------------------------------------------------------------------------------------------------------------
# What the client sends
# --------------------------------------------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=20)
contents = st.one_of(st.text(max_size=200), st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=50)}), json_values), max_size=3), json_values)
messages = st.lists(st.one_of(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "x"]),
                                                     "content": contents}), json_values), max_size=5)
documents = st.lists(st.one_of(st.text(max_size=40), st.fixed_dictionaries({"text": st.one_of(st.text(max_size=40), json_values)}), json_values), max_size=3)
nonblank = st.text(min_size=1, max_size=40).filter(str.strip)
valid_explicit = st.fixed_dictionaries({"question": nonblank, "documents": st.lists(nonblank, min_size=1, max_size=3)})
ragtap_fields = st.one_of(valid_explicit, json_values, st.fixed_dictionaries({}, optional={"question": st.one_of(st.text(max_size=40), json_values),
                                                                            "documents": st.one_of(documents, json_values),
                                                                            "enabled": st.one_of(st.booleans(), json_values)}))
bodies = st.fixed_dictionaries(
    {"model": st.one_of(st.just("gpt-4o-mini"), json_values)},
    optional={"messages": st.one_of(messages, json_values), "ragtap": ragtap_fields, "stream": st.one_of(st.booleans(), json_values),
              "response_format": st.one_of(st.just({"type": "json_object"}), st.just({"type": "text"}), json_values),
              "tools": json_values, "n": json_values, "stream_options": json_values, "temperature": json_values},
)
raw_bodies = st.one_of(st.binary(max_size=200), json_values.map(lambda v: json.dumps(v).encode()), json_ish.map(str.encode),
                       bodies.map(lambda b: json.dumps(b).encode()))


@FUZZ
@given(body=bodies)
async def test_fuzzed_requests_never_get_a_500(shared, body) -> None:
    shared.upstream.content = None
    before = len(shared.upstream.requests)
    result = await request(shared.session, shared.url + "/v1/chat/completions", raw=json.dumps(body).encode())
    assert result.error is None, result.error
    assert result.status is not None and result.status < 500, (result.status, result.body[:300])
    if len(shared.upstream.requests) > before:
        forwarded = shared.upstream.requests[-1].body
        try:
            decoded = json.loads(forwarded)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and forwarded != json.dumps(body).encode():  # rewritten by ragtap
            assert "ragtap" not in decoded


@FUZZ
@given(raw=raw_bodies, path=st.sampled_from(["/v1/chat/completions", "/chat/completions", "/v1/embeddings"]))
async def test_fuzzed_raw_bodies_never_get_a_500(shared, raw, path) -> None:
    shared.upstream.content = None
    result = await request(shared.session, shared.url + path, raw=raw)
    assert result.error is None, result.error
    assert result.status is not None and result.status < 500, (result.status, result.body[:300])
