"""What `note_request` reads from a request (identity, conversation id, sampling settings), written for speed: the
same results as the plain reference below on any JSON body and any headers (property-tested)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from ragtap.exchange import CONVERSATION_HEADER, MAX_IDENTITY_CHARS, RequestParameters, conversation_id, request_identity, request_parameters


def _identity(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_IDENTITY_CHARS]
    return None


def reference_identity(body, headers, user_headers, session_headers):  # type: ignore[no-untyped-def]
    metadata = body.get("metadata") if body is not None else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    user = next((found for name in user_headers if (found := _identity(headers.get(name))) is not None), None)
    if user is None and body is not None:
        user = _identity(body.get("user")) or _identity(body.get("safety_identifier")) or _identity(metadata.get("user_id"))
    session = next((found for name in session_headers if (found := _identity(headers.get(name))) is not None), None)
    return user, session or _identity(metadata.get("session_id"))


def reference_conversation(body, headers):  # type: ignore[no-untyped-def]
    found = _identity(headers.get(CONVERSATION_HEADER))
    if found is None and body is not None:
        conversation = body.get("conversation")
        if isinstance(conversation, dict):
            conversation = conversation.get("id")
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        found = _identity(conversation) or _identity(metadata.get("conversation_id")) or _identity(metadata.get("thread_id"))
    return found


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reference_parameters(body):  # type: ignore[no-untyped-def]
    if body is None:
        return None
    stop = body.get("stop")
    stops = (stop,) if isinstance(stop, str) else tuple(s for s in stop if isinstance(s, str)) if isinstance(stop, list) else ()
    reasoning = body.get("reasoning")
    effort = body.get("reasoning_effort")
    if effort is None and isinstance(reasoning, dict):
        effort = reasoning.get("effort")
    fmt = body.get("response_format")
    if fmt is None and isinstance(body.get("text"), dict):
        fmt = body["text"].get("format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    output = "json" if kind in ("json_object", "json_schema") else "text" if kind == "text" else None
    return RequestParameters(
        temperature=_number(body.get("temperature")), top_p=_number(body.get("top_p")),
        max_tokens=_whole(body.get("max_completion_tokens", body.get("max_tokens", body.get("max_output_tokens")))),
        seed=_whole(body.get("seed")), choice_count=_whole(body.get("n")), frequency_penalty=_number(body.get("frequency_penalty")),
        presence_penalty=_number(body.get("presence_penalty")), stop_sequences=stops, output_type=output,
        reasoning_level=effort if isinstance(effort, str) else None,
    )


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False),
                     st.sampled_from(["", " ", " id-7 ", "x" * 300, "json_object", "text", "json_schema", "low"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["id", "type", "effort", "format", "user_id", "session_id"]), inner, max_size=3)),
    max_leaves=6)
_ids = st.sampled_from(["", " ", " id-7 ", "x" * 300, None, 5, ["a"]])
_id_dict = st.fixed_dictionaries({}, optional={k: _ids for k in ("id", "user_id", "session_id", "conversation_id", "thread_id")})
_PARAMETER_KEYS = ("temperature", "top_p", "max_completion_tokens", "max_tokens", "max_output_tokens", "seed", "n", "frequency_penalty",
                   "presence_penalty", "stop", "response_format", "text", "reasoning", "reasoning_effort", "model")
# Each field present or not (about half the time): identity fields hold ids or junk, the rest any JSON.
_bodies = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "user": _ids, "safety_identifier": _ids, "metadata": st.one_of(_id_dict, _values), "conversation": st.one_of(_ids, _id_dict),
    **{key: _values for key in _PARAMETER_KEYS},
}))
_header_names = st.sampled_from(["x-ragtap-user", "X-Ragtap-Session", "x-gateway-user", "x-ragtap-conversation", "authorization"])
_headers = st.one_of(st.just([]), st.lists(st.tuples(_header_names, st.sampled_from(["", "  ", "gw-user", " spaced ", "y" * 300])), max_size=4))


@settings(max_examples=300, deadline=None)
@given(body=_bodies, pairs=_headers, user_headers=st.sampled_from([("x-ragtap-user",), ("x-gateway-user", "x-ragtap-user")]))
def test_identity_matches_the_reference(body, pairs, user_headers) -> None:  # type: ignore[no-untyped-def]
    headers = CIMultiDictProxy(CIMultiDict(pairs))
    session_headers = ("x-ragtap-session",)
    assert request_identity(body, headers, user_headers, session_headers) == reference_identity(body, headers, user_headers, session_headers)


@settings(max_examples=300, deadline=None)
@given(body=_bodies, pairs=_headers)
def test_conversation_id_matches_the_reference(body, pairs) -> None:  # type: ignore[no-untyped-def]
    headers = CIMultiDictProxy(CIMultiDict(pairs))
    assert conversation_id(body, headers) == reference_conversation(body, headers)


@settings(max_examples=300, deadline=None)
@given(body=_bodies)
def test_request_parameters_match_the_reference(body) -> None:  # type: ignore[no-untyped-def]
    assert repr(request_parameters(body)) == repr(reference_parameters(body))  # (repr: 7 and 7.0 compare equal)
