"""Settings of the guard (`[guard]` in config.toml, `RAGTAP_GUARD`) and the per-request override.

The guard is off by default: it is the one part of ragtap that changes what the app receives, so it is a
deliberate choice, per deployment (`action`) or per request (the `ragtap` field's `guard` key, or the header
`x-ragtap-guard`).  A plain frozen dataclass, like the other sections; `ragtap.config` loads and checks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ACTIONS: tuple[str, ...] = ("off", "annotate", "strip", "block", "retry")
# What the retry falls back to when its second answer does not pass either.
FALLBACKS: tuple[str, ...] = ("strip", "block")
# What may trigger the guard: a verdict of the whole reply, or "contradicted" (a claim the documents contradict,
# a claim outcome rather than a verdict: ragtap.types.ClaimOutcome).
TRIGGERS: tuple[str, ...] = ("parametric", "unsupported_answer", "refusal", "contradicted")
CONTRADICTED = "contradicted"
HEADER = "x-ragtap-guard"

DEFAULT_BLOCK_MESSAGE = (
    "I can't give a reliable answer to this from the documents I have. Please rephrase the question or check the "
    "source documents directly."
)


@dataclass(frozen=True)
class GuardSettings:
    """`action`: what to do with an answer that trips a trigger (see docs/guard.md).  `verdicts`: the triggers.
    `deadline_ms`: how long an answer (or, in a stream, one sentence) may wait for its check; past it, it is
    released unchanged.  `block_message`: what `block` delivers instead.  `strip_note`: appended after a strip
    (empty: nothing).  `retry_fallback`: `strip` or `block`, for a retried answer that still does not pass.
    `retry_prompt`: the stricter instruction (a file in ragtap/prompts/).  `max_in_flight`: checks running or
    waiting at once; beyond it an answer is released unchanged (`overload`) instead of queueing behind others."""

    action: str = "off"
    verdicts: tuple[str, ...] = ("unsupported_answer", "parametric", CONTRADICTED)
    deadline_ms: float = 300.0
    block_message: str = DEFAULT_BLOCK_MESSAGE
    strip_note: str = ""
    retry_fallback: str = "strip"
    retry_prompt: str = "guard_retry"
    max_in_flight: int = 64


@dataclass(frozen=True, slots=True)
class GuardRequest:
    """The guard as one request asked for it: the action, and whether the verdict goes into the body too."""

    action: str
    annotate_body: bool = False
    problem: str | None = None  # why the request's own guard setting was ignored (one of REQUEST_PROBLEMS)


REQUEST_PROBLEMS = frozenset({"unknown_action", "not_an_object"})


def requested_guard(settings: GuardSettings, ragtap_field: Any, header: str | None) -> GuardRequest:
    """The action for one request: the `ragtap` field's `guard` (a name, or `{"action": ..., "annotate_body":
    true}`: `annotate_body` also puts the verdict in the response body), else the `x-ragtap-guard` header, else the
    configured one.  A value ragtap does not know is ignored
    (the configured action applies) and named in `problem`: the app still gets its answer."""
    action, body, problem = None, False, None
    value = ragtap_field.get("guard") if isinstance(ragtap_field, Mapping) else None
    if isinstance(value, Mapping):
        body = value.get("annotate_body") is True
        value = value.get("action")
    if value is not None:
        if isinstance(value, str) and value.strip().lower() in ACTIONS:
            action = value.strip().lower()
        else:
            problem = "unknown_action" if isinstance(value, str) else "not_an_object"
    if action is None and header is not None:
        if header.strip().lower() in ACTIONS:
            action = header.strip().lower()
        else:
            problem = "unknown_action"
    return GuardRequest(action or settings.action, body, problem)
