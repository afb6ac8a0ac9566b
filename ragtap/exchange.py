"""The record of one proxied HTTP exchange, filled in by the proxy as the exchange goes on.

It is created by `ragtap.proxy` and read by the exporters (hooks) and, through `Interaction.exchange`, by the
scoring side.  It depends on nothing else in ragtap, so every layer may import it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Identifiers are copied into stores and spans: cap them, the app may send anything.
MAX_IDENTITY_CHARS = 256
USER_HEADER = "x-ragtap-user"
SESSION_HEADER = "x-ragtap-session"
CONVERSATION_HEADER = "x-ragtap-conversation"


@dataclass(slots=True)  # not frozen: built per request, and a frozen init costs several times more
class RequestParameters:
    """The request settings the GenAI conventions record on the chat span (`gen_ai.request.*`), when the app set them."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    choice_count: int | None = None  # `n`
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    stop_sequences: tuple[str, ...] = ()
    output_type: str | None = None  # gen_ai.output.type: "text" | "json" (response_format json_object/json_schema)
    reasoning_level: str | None = None  # `reasoning_effort`


@dataclass(slots=True)  # not frozen: built per request, and a frozen init costs several times more
class ChatMessagePart:
    """One part of a message in the GenAI conventions' message format: `text`, `tool_call` or `tool_call_response`."""

    type: str
    content: str | None = None  # text, or a tool's response
    id: str | None = None  # tool call id
    name: str | None = None  # tool name
    arguments: str | None = None  # tool call arguments (JSON text as the app sent it)


@dataclass(slots=True)  # not frozen: built per request, and a frozen init costs several times more
class ChatMessage:
    role: str
    parts: tuple[ChatMessagePart, ...]


@dataclass(slots=True)  # not frozen: built per request, and a frozen init costs several times more
class Overhead:
    """What ragtap itself added to one exchange: the injected instruction's input tokens, the supporting content's
    output tokens, and their price (None when the model has no price in `[cost]`)."""

    model: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


@dataclass(slots=True)
class GuardRecord:
    """What the guard (ragtap/guard/) did to one answer: the action asked for, the outcome (a closed set:
    `ragtap.guard.decision.OUTCOMES`, a metrics label), and the answer before and after."""

    action: str
    outcome: str
    trigger: str | None = None  # what tripped it: the verdict or "contradicted" (a stream: the sentence's outcome)
    original_answer: str | None = None  # the answer as the model wrote it
    delivered_answer: str | None = None  # what the app received, when the guard changed it (None: unchanged)
    removed_claims: int = 0  # sentences / list items stripped
    sentences_checked: int = 0  # streams: sentences checked before release
    sentences_late: int = 0  # streams: sentences released unchecked at the deadline
    retry: str | None = None  # retry: passed | failed | error, or why it could not be judged (timeout, ...)
    waited_ms: float | None = None  # how long the answer (whole replies) or the last sentence waited for the guard


@dataclass(slots=True)
class ExchangeRecord:
    """What the proxy knows about one request/response, filled in as the exchange goes on.

    Times are `time.perf_counter()` readings.  Never holds credentials: `trace_headers` keeps only the W3C
    trace-context headers of the incoming request.
    """

    route: str
    method: str = "POST"
    provider: str | None = None  # gen_ai.provider.name when the route says it ("anthropic"); else the configured one
    request_model: str | None = None
    # Who asked, when the app says so (the OpenAI `user` field, `metadata`, or x-ragtap-* headers): for the
    # capture store and spans, never Prometheus labels (unbounded cardinality).
    user: str | None = None
    session: str | None = None
    stream: bool = False
    rag_source: str | None = None  # the recognition rule that matched, None for non-RAG
    # Why recognition decided as it did: the rule, the client setting that forbids injection, or why not RAG
    # ("no_context", "no_question", ...); a closed set (ragtap.recognise.REASONS), safe as a metrics label.
    recognition: str | None = None
    # What was wrong with a malformed `ragtap` field (ragtap.recognise.FIELD_PROBLEMS), None when it was fine or
    # absent: counted and logged whatever recognition decided.
    ragtap_field_problem: str | None = None
    injected: bool = False
    trace_headers: dict[str, str] = field(default_factory=dict)
    upstream_host: str | None = None
    upstream_port: int | None = None
    started_at: float = field(default_factory=time.perf_counter)
    upstream_sent_at: float | None = None
    upstream_headers_at: float | None = None
    upstream_done_at: float | None = None
    first_token_at: float | None = None  # first answer text forwarded to the app (streams)
    finished_at: float | None = None
    status: int | None = None
    error_type: str | None = None
    outcome: str = "complete"  # complete | incomplete (client went away) | upstream_error
    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: tuple[str, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    supporting_tokens: int | None = None  # tokens the model spent on the supporting content
    # Usage details the upstream reported (OpenAI `*_tokens_details`; Anthropic `cache_read_input_tokens`): cached
    # prompt tokens, reasoning tokens; and (Anthropic) prompt tokens written to the cache.
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    # The request's sampling settings and reply format (GenAI span attributes), the app's conversation/thread id.
    parameters: RequestParameters | None = None
    conversation_id: str | None = None
    # The app's messages (typed, texts shared with the parsed body, not copied) and the answer the app received:
    # recorded on spans only under content capture, and offered to the capture store.
    input_messages: tuple[ChatMessage, ...] = ()
    output_text: str | None = None
    # The instruction ragtap added to the request (None when it injected nothing), and what ragtap's own tokens
    # cost: settled by the proxy before `exchange_finished` (ragtap.cost.settle_overhead).
    injected_instruction: str | None = None
    overhead: Overhead | None = None
    # The guard's record (None when it was off for this exchange), and the tokens of its retry (ragtap's own cost).
    guard: GuardRecord | None = None
    retry_input_tokens: int | None = None
    retry_output_tokens: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-exporter state (e.g. the OTel span)

    @property
    def total_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return self.finished_at - self.started_at

    @property
    def upstream_seconds(self) -> float | None:
        if self.upstream_sent_at is None or self.upstream_done_at is None:
            return None
        return self.upstream_done_at - self.upstream_sent_at

    @property
    def added_seconds(self) -> float | None:
        """ragtap's own share of the wall time: everything that was not waiting for the upstream."""
        total, upstream = self.total_seconds, self.upstream_seconds
        if total is None or upstream is None:
            return None
        return max(0.0, total - upstream)


def _identity(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_IDENTITY_CHARS]
    return None


def _from_headers(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The first of `names` whose header holds an identity (plain loops: this runs for every request)."""
    for name in names:
        value = headers.get(name)
        if value is not None:
            found = _identity(value)
            if found is not None:
                return found
    return None


def request_identity(
    body: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    user_headers: tuple[str, ...] = (USER_HEADER,),
    session_headers: tuple[str, ...] = (SESSION_HEADER,),
) -> tuple[str | None, str | None]:
    """(user, session) of a request: the headers first (x-ragtap-* by default, `[store] user_headers` /
    `session_headers`: set by a gateway the app trusts), then the body's OpenAI fields: `user` (or its successor
    `safety_identifier`) and `metadata.user_id` / `metadata.session_id` (OpenAI's free-form metadata; LangChain and
    the Agents SDK pass it through)."""
    metadata = body.get("metadata") if body is not None else None
    if metadata is not None and not isinstance(metadata, Mapping):
        metadata = None
    user = _from_headers(headers, user_headers)
    if user is None and body is not None:
        for value in (body.get("user"), body.get("safety_identifier"), metadata.get("user_id") if metadata is not None else None):
            if value is not None and (user := _identity(value)) is not None:
                break
    session = _from_headers(headers, session_headers)
    if session is None and metadata is not None:
        session = _identity(metadata.get("session_id"))
    return user, session


def note_request(
    record: ExchangeRecord,
    body: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    user_headers: tuple[str, ...] = (USER_HEADER,),
    session_headers: tuple[str, ...] = (SESSION_HEADER,),
    *,
    keep_messages: bool = False,
) -> None:
    """Everything the exporters and the capture store read from the request itself: who asked (user, session,
    conversation), the sampling settings and reply format, and, with `keep_messages` (only the spans' content
    capture reads them: not paid for on every request otherwise), the chat messages (typed, texts not copied)."""
    record.user, record.session = request_identity(body, headers, user_headers, session_headers)
    record.conversation_id = conversation_id(body, headers)
    record.parameters = request_parameters(body)
    if body is not None and keep_messages:
        record.input_messages = chat_messages(body.get("messages"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _output_type(body: Mapping[str, Any]) -> str | None:
    """`gen_ai.output.type` of a chat request (`response_format`) or a Responses request (`text.format`)."""
    fmt = body.get("response_format")
    if fmt is None:
        text = body.get("text")
        if text is None or not isinstance(text, dict):
            return None
        fmt = text.get("format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in ("json_object", "json_schema"):
        return "json"
    return "text" if kind == "text" else None


def request_parameters(body: Mapping[str, Any] | None) -> RequestParameters | None:
    """The sampling settings and reply format the app asked for (chat completions or Responses field names).
    (Most of these fields are absent from most requests: a value is checked only when there is one.)"""
    if body is None:
        return None
    get = body.get
    stop = get("stop")
    stops = () if stop is None else (stop,) if isinstance(stop, str) else tuple(s for s in stop if isinstance(s, str)) if isinstance(stop, list) else ()
    effort = get("reasoning_effort")
    if effort is None:
        reasoning = get("reasoning")
        if reasoning is not None and isinstance(reasoning, dict):
            effort = reasoning.get("effort")
    temperature, top_p, seed, choices = get("temperature"), get("top_p"), get("seed"), get("n")
    frequency, presence = get("frequency_penalty"), get("presence_penalty")
    max_tokens = get("max_completion_tokens", get("max_tokens", get("max_output_tokens")))
    return RequestParameters(
        None if temperature is None else _number(temperature),
        None if top_p is None else _number(top_p),
        None if max_tokens is None else _whole(max_tokens),
        None if seed is None else _whole(seed),
        None if choices is None else _whole(choices),
        None if frequency is None else _number(frequency),
        None if presence is None else _number(presence),
        stops,
        _output_type(body),
        effort if isinstance(effort, str) else None,
    )


def conversation_id(body: Mapping[str, Any] | None, headers: Mapping[str, str]) -> str | None:
    """The app's conversation (thread) id: header `x-ragtap-conversation`, the Responses API's `conversation`
    (an id or {"id": ...}), or `metadata.conversation_id` / `metadata.thread_id`."""
    found = _from_headers(headers, (CONVERSATION_HEADER,))
    if found is None and body is not None:
        conversation = body.get("conversation")
        if conversation is not None:
            if isinstance(conversation, dict):
                conversation = conversation.get("id")
            found = _identity(conversation)
        metadata = body.get("metadata")
        if found is None and metadata is not None and isinstance(metadata, dict):
            found = _identity(metadata.get("conversation_id")) or _identity(metadata.get("thread_id"))
    return found


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


def chat_messages(messages: Any) -> tuple[ChatMessage, ...]:
    """The chat request's messages in the GenAI conventions' shape (role + parts); texts are shared, not copied."""
    if not isinstance(messages, list):
        return ()
    out = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            continue
        role, parts = message["role"], []
        text = _text_of(message.get("content"))
        if role == "tool":
            parts.append(ChatMessagePart("tool_call_response", content=text, id=_identity(message.get("tool_call_id"))))
        elif text is not None:
            parts.append(ChatMessagePart("text", content=text))
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                arguments = function.get("arguments")
                parts.append(ChatMessagePart("tool_call", id=_identity(call.get("id")), name=_identity(function.get("name")),
                                             arguments=arguments if isinstance(arguments, str) else None))
        out.append(ChatMessage(role, tuple(parts)))
    return tuple(out)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), the usual answers first (a JSON object, or nothing: the ABC check is slow)."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def note_usage(record: ExchangeRecord, usage: Any) -> None:
    """Copy an upstream `usage` object onto the record: chat completions (`prompt_tokens`, `completion_tokens`,
    `*_tokens_details`) or Responses (`input_tokens`, `output_tokens`, `*_tokens_details`) field names."""
    if not _is_mapping(usage):
        return
    responses = "input_tokens" in usage or "output_tokens" in usage
    record.input_tokens = _count(usage.get("input_tokens" if responses else "prompt_tokens"))
    record.output_tokens = _count(usage.get("output_tokens" if responses else "completion_tokens"))
    inputs = usage.get("input_tokens_details" if responses else "prompt_tokens_details")
    outputs = usage.get("output_tokens_details" if responses else "completion_tokens_details")
    record.cached_input_tokens = _count(inputs.get("cached_tokens")) if _is_mapping(inputs) else None
    record.reasoning_tokens = _count(outputs.get("reasoning_tokens")) if _is_mapping(outputs) else None


def note_anthropic_usage(record: ExchangeRecord, usage: Any) -> None:
    """Copy an Anthropic `usage` object onto the record.  Its `input_tokens` leaves out the prompt tokens read from
    or written to the cache; the record's `input_tokens` is the whole prompt (as OpenAI counts it), with the cache
    read in `cached_input_tokens` and the cache write in `cache_creation_input_tokens`.  A `message_delta`'s usage is
    cumulative and may carry only `output_tokens`: only the counts present are written."""
    if not isinstance(usage, Mapping):
        return

    def count(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    output = count("output_tokens")
    if output is not None:
        record.output_tokens = output
    fresh, read, written = count("input_tokens"), count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    if read is not None:
        record.cached_input_tokens = read
    if written is not None:
        record.cache_creation_input_tokens = written
    if fresh is not None:
        record.input_tokens = fresh + (record.cached_input_tokens or 0) + (record.cache_creation_input_tokens or 0)
