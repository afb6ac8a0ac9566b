"""Decide whether a chat-completions request is RAG, and extract its question and retrieved documents.

Runs on the request path for every chat request, so the order is cheapest-first and a plain chat costs a few
microseconds: dictionary look-ups, one backwards scan for the last user message, then each rule's substring
gate on the few texts it looks at (never the assistant turns of the history).

Order of the rules (the first that yields a question and at least one document wins):
1. explicit: the top-level `ragtap` object (the app said so; nothing else is consulted unless it is malformed);
2. config patterns (`CustomPattern`), in config order;
3. templates in the last user message: LlamaIndex text-QA, LangChain `rlm/rag-prompt` (both label orders),
   LangChain "stuff"/LCEL prompts;
4. templates in a system (or `developer`) message with the question in the last user message: LlamaIndex
   `ContextChatEngine`, LangChain chat "stuff" / `create_stuff_documents_chain` prompts;
5. XML-style `<context>`/`<documents>` blocks, in the last user message, then in system messages;
6. `tool`-role retrieval results after the last user message (agent-style RAG).
Only the LAST user message is read as the place of a template or of the question: earlier user turns are
history, and a template there belongs to an old question.

Decisions:
- `ragtap` field: always reported for stripping when the key is present, whatever its value.  `{"enabled":
  false}` -> not RAG, reason "disabled".  A valid object whose question or documents are empty after
  stripping -> not RAG, reason "explicit_empty" (the app told us retrieval found nothing; we do not second-guess
  it with the implicit rules).  Any other shape (not an object, `enabled` not a bool, only one of
  question/documents, a document that is neither a string nor `{"text": str, "id"?: str|int}`) is ignored as a
  whole and the implicit rules run; if none matches, the reason is "bad_ragtap_field" so the app's bug shows up
  in the metrics.  `{}` or `{"enabled": true}` alone just means "detect as usual".
- The client owns the reply format when it sets `response_format` (other than `{"type": "text"}` / `{}`),
  non-empty `tools` or `functions`, or `n > 1`: the context is still returned (QRD/QA can be scored) but
  `inject` is False and the reason names the setting ("client_response_format", "client_tools", "n_gt_1").
  Tool-role RAG is an agent loop that offers tools by nature: it is recognised, and `inject` stays False while
  the request still offers tools, because the model may answer with another tool call; in the final call
  without tools ragtap may inject.
- `reason` is a small closed set (safe as a metrics label): the rule's source for an injectable RAG request
  ("explicit", "langchain", "llamaindex_text_qa", "llamaindex_context_chat", "xml", "tool", "custom_pattern"; a
  pattern's own name is in `context.source`), the client setting that forbids injection, or why it is not RAG
  ("not_rag", "disabled", "explicit_empty", "bad_ragtap_field", "bad_body", "bad_messages").
- Never raises: every field is type-checked before use, and a last-resort guard turns an unexpected exception
  into "internal_error" (not RAG) so a recognition bug can never break proxying.  Never mutates the body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragtap.recognise import text as rules_text
from ragtap.recognise.rules import RULE_NAMES, RULES, Rule
from ragtap.recognise.custom import CustomPattern
from ragtap.types import Document, RagContext


@dataclass(frozen=True, slots=True)
class Recognition:
    """What `recognise` decided about one request; shared instances are safe (frozen)."""

    context: RagContext | None  # None: not RAG
    inject: bool  # True: ragtap may add its instruction (False when the client owns the reply format, or not RAG)
    strip_ragtap_field: bool  # the body had a top-level "ragtap" key that must be removed before forwarding
    reason: str  # short snake_case why (see the module docstring)
    # What is wrong with a malformed `ragtap` field (one of FIELD_PROBLEMS), whatever recognition then decided:
    # the app's bug is counted and logged even when an implicit rule recognises the request.
    field_problem: str | None = None


# Why a `ragtap` field is malformed: a closed set (a metrics label).
FIELD_PROBLEMS = frozenset({
    "not_an_object", "enabled_not_bool", "question_not_string", "documents_not_list", "document_not_text", "document_bad_id",
})
# Every value `Recognition.reason` can take: the rule labels, the client settings that forbid injection and the
# reasons a request is not RAG.  Closed, so it is safe as a Prometheus label (tests check recognise() stays in it).
# ("client_background" is a Responses API setting: ragtap/recognise/responses.py; "client_thinking",
# "client_prefill", "client_citations" and the document blocks are the Messages API's: ragtap/recognise/messages.py)
CLIENT_REASONS = frozenset({
    "client_response_format", "client_tools", "n_gt_1", "client_background", "client_thinking", "client_prefill", "client_citations",
})
NOT_RAG_REASONS = frozenset({
    "no_context", "no_question", "disabled", "explicit_empty", "bad_ragtap_field", "bad_body", "bad_messages",
    "internal_error", "unreadable_documents",
})
REASONS: frozenset[str] = RULE_NAMES | {"explicit", "custom_pattern", "anthropic_documents"} | CLIENT_REASONS | NOT_RAG_REASONS

_SYSTEM_ROLES = frozenset({"system", "developer"})  # "developer" is the o1-era name of the system role
_TOOL_ROLES = frozenset({"tool", "function"})  # "function" is the legacy (functions API) tool result role

# Not-RAG outcomes are few (strip flag x reason) and immutable: build each once.  Constructing a frozen
# dataclass costs about as much as the whole plain-chat path, so this halves the cost of a non-RAG request.
_NOT_RAG: dict[tuple[bool, str], Recognition] = {}


def _not_rag(strip: bool, reason: str) -> Recognition:
    found = _NOT_RAG.get((strip, reason))
    if found is None:
        found = _NOT_RAG[(strip, reason)] = Recognition(None, False, strip, reason)
    return found


def recognise(body: Any, patterns: Sequence[CustomPattern] = ()) -> Recognition:
    """Recognise a decoded chat-completions request body; see the module docstring for the rules.

    `body` is typed Any on purpose: whatever JSON the client sent (a list, a string, a dict with nonsense
    fields) gets a `Recognition`, never an exception.
    """
    try:
        result = _recognise(body, patterns)
        if result.strip_ragtap_field and result.reason != "explicit":
            problem = _explicit(body["ragtap"])[2]
            if problem is not None:
                result = dataclasses.replace(result, field_problem=problem)
        return result
    except Exception:  # noqa: BLE001 - last resort: recognition must never break the request path
        return Recognition(None, False, isinstance(body, dict) and "ragtap" in body, "internal_error")


def _recognise(body: Any, patterns: Sequence[CustomPattern]) -> Recognition:
    if not isinstance(body, dict):
        return _not_rag(False, "bad_body")
    strip = "ragtap" in body
    fallback = "not_rag"
    if strip:
        state, explicit, _ = _explicit(body["ragtap"])
        if explicit is not None:
            return _found(body, explicit, strip, "explicit")
        if state == "disabled":
            return _not_rag(True, "disabled")
        if state == "empty":
            return _not_rag(True, "explicit_empty")
        if state == "bad":
            fallback = "bad_ragtap_field"

    messages = body.get("messages")
    if not isinstance(messages, list):
        return _not_rag(strip, "bad_messages" if fallback == "not_rag" else fallback)

    last_user = -1
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, dict) and message.get("role") == "user":
            last_user = i
            break
    question = rules_text.message_text(messages[last_user].get("content")) if last_user >= 0 else ""

    if patterns:
        found = _match_custom(messages, last_user, question, patterns)
        if found is not None:
            return _found(body, found, strip, "custom_pattern")

    if question:
        user_gates: GateResults = {}
        if _some_rule_may_match(messages, last_user, question, user_gates):
            found = _match_rules(messages, last_user, question, user_gates)
            if found is not None:
                return _found(body, found, strip, found.source)
    if fallback == "not_rag":
        fallback = "no_context" if question else "no_question"
    return _not_rag(strip, fallback)


GateResults = dict[Callable[[str], bool], bool]  # a text's gate -> whether it passed


def _some_rule_may_match(messages: list[Any], last_user: int, question: str, user_gates: GateResults) -> bool:
    """False when no built-in rule can match: no rule's first gate passes on a text of its place, and no message
    follows the last user message (where tool results would be).  A plain chat is then decided by the few gates
    alone, without the rules' stages (51,000 -> 23,000 instructions on a 1.3 KB chat request).  The user message's gate
    results are kept in `user_gates` for `_match_rules`."""
    if _ALWAYS_TRY or last_user < len(messages) - 1:
        return True
    for gate in _USER_FIRSTS:
        if user_gates.setdefault(gate, gate(question)):
            return True
    for m in messages:
        if isinstance(m, dict) and isinstance(role := m.get("role"), str) and role in _SYSTEM_ROLES:
            text = rules_text.message_text(m.get("content"))
            for gate in _SYSTEM_FIRSTS:
                if gate(text):
                    return True
    return False


def _match_rules(messages: list[Any], last_user: int, question: str, user_gates: GateResults) -> RagContext | None:
    """Try the built-in rules in registry order (grouped into runs of one place, see `_stages`).  Each gate runs
    at most once per text, and a run is skipped for a text when none of its rules' first gates passes: a plain
    chat costs a handful of substring scans, not one per rule.  `user_gates`: the user message's gate results
    known already."""
    systems: list[str] | None = None
    passed: dict[int, GateResults] = {-1: user_gates}  # text slot (-1: the user message) -> gate results
    for place, stage, firsts in _STAGES:
        if place == "tools":
            if last_user < len(messages) - 1:
                contents = [
                    m.get("content")
                    for m in messages[last_user + 1 :]
                    if isinstance(m, dict) and isinstance(role := m.get("role"), str) and role in _TOOL_ROLES
                ]
                for rule in stage:
                    if contents and (found := rule.match(contents, question)) is not None:
                        return found
            continue
        if place == "user":
            texts: Sequence[str] = (question,)
        else:
            if systems is None:
                systems = [
                    rules_text.message_text(m.get("content"))
                    for m in messages
                    if isinstance(m, dict) and isinstance(role := m.get("role"), str) and role in _SYSTEM_ROLES
                ]
            texts = systems
        for index, text in enumerate(texts):
            slot = index if place == "system" else -1
            results = passed.setdefault(slot, {})  # gate -> result, for this text
            # Plain loops, no any()/all() generators: this runs on every chat request.
            for gate in firsts:
                ok = results.get(gate)
                if ok is None:
                    ok = results[gate] = gate(text)
                if ok:
                    break
            else:
                continue
            for rule in stage:
                for gate in rule.gates:
                    ok = results.get(gate)
                    if ok is None:
                        ok = results[gate] = gate(text)
                    if not ok:
                        break
                else:
                    found = rule.match(text, question)
                    if found is not None:
                        return found
    return None


Stage = tuple[str, tuple[Rule, ...], tuple[Callable[[str], bool], ...]]


def _stages(rules: tuple[Rule, ...]) -> tuple[Stage, ...]:
    """Consecutive rules of one place, in registry order (a run of system rules is tried per system message),
    with the distinct first gates of the run's rules."""
    runs: list[tuple[str, list[Rule]]] = []
    for rule in rules:
        if runs and runs[-1][0] == rule.place:
            runs[-1][1].append(rule)
        else:
            runs.append((rule.place, [rule]))
    return tuple(
        (place, tuple(run), tuple(dict.fromkeys(rule.gates[0] for rule in run if rule.gates))) for place, run in runs
    )


_STAGES = _stages(RULES)
# Every rule's first gate, by the place it reads (for `_some_rule_may_match`); a rule of those places without a
# gate would make every request worth trying.
_USER_FIRSTS = tuple(dict.fromkeys(rule.gates[0] for rule in RULES if rule.place == "user" and rule.gates))
_SYSTEM_FIRSTS = tuple(dict.fromkeys(rule.gates[0] for rule in RULES if rule.place == "system" and rule.gates))
_ALWAYS_TRY = any(not rule.gates for rule in RULES if rule.place in ("user", "system")) or any(
    rule.place not in ("user", "system", "tools") for rule in RULES)


def _found(body: dict[str, Any], context: RagContext, strip: bool, reason: str) -> Recognition:
    client = _client_owns_format(body)
    if client is not None:
        return Recognition(context, False, strip, client)
    return Recognition(context, True, strip, reason)


def _client_owns_format(body: dict[str, Any]) -> str | None:
    """The reason ragtap must not change the reply format, or None when it may inject."""
    response_format = body.get("response_format")
    if response_format is not None and not (
        isinstance(response_format, dict) and (not response_format or response_format.get("type") == "text")
    ):
        return "client_response_format"
    if body.get("tools") or body.get("functions"):
        return "client_tools"
    n = body.get("n")
    if isinstance(n, (int, float)) and not isinstance(n, bool) and n > 1:
        return "n_gt_1"
    return None


def _explicit(field: Any) -> tuple[str, RagContext | None, str | None]:
    """Read the `ragtap` field: ("ok", context, None) | ("disabled"|"empty"|"absent", None, None) |
    ("bad", None, problem) with the problem one of FIELD_PROBLEMS."""
    if not isinstance(field, dict):
        return "bad", None, "not_an_object"
    enabled = field.get("enabled", True)
    if enabled is False:
        return "disabled", None, None
    if enabled is not True:
        return "bad", None, "enabled_not_bool"
    if "question" not in field and "documents" not in field:
        return "absent", None, None
    question, documents = field.get("question"), field.get("documents")
    if not isinstance(question, str):
        return "bad", None, "question_not_string"
    if not isinstance(documents, list):
        return "bad", None, "documents_not_list"
    docs: list[Document] = []
    for item in documents:
        if isinstance(item, str):
            docs.append(Document(text=item))
            continue
        if not isinstance(item, dict) or not isinstance(text := item.get("text"), str):
            return "bad", None, "document_not_text"
        doc_id = item.get("id")
        if doc_id is not None:
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                return "bad", None, "document_bad_id"
            doc_id = str(doc_id) or None
        docs.append(Document(text=text, id=doc_id))
    context = rules_text.make_context(question, docs, "explicit")
    return ("ok", context, None) if context is not None else ("empty", None, None)


def _match_custom(
    messages: list[Any], last_user: int, question: str, patterns: Sequence[CustomPattern]
) -> RagContext | None:
    wanted = frozenset().union(*(p.roles for p in patterns))
    texts: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(role := message.get("role"), str):
            continue
        if role not in wanted or (role == "user" and i != last_user):
            continue
        texts.append((role, question if i == last_user else rules_text.message_text(message.get("content"))))
    if not texts:
        return None
    for pattern in patterns:
        found = pattern.match(texts, question)
        if found is not None:
            return found
    return None
