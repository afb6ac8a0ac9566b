"""Injection: add the supporting-content instruction to a RAG request the reply format of which ragtap owns."""

from __future__ import annotations

from typing import Any

from ragtap.config import InjectSettings
from ragtap.prompts import prompt_text


def without_ragtap_field(body: dict[str, Any]) -> dict[str, Any]:
    """The request without ragtap's own `ragtap` object, which the upstream must never see."""
    return {key: value for key, value in body.items() if key != "ragtap"}


def after_own(own: Any, instruction: str) -> str | None:
    """The app's own prompt text with the instruction after it (a blank line between), or the instruction alone when
    the app has none; None when the app's value is not text (the caller decides where the instruction goes then).
    Last, it is the most recent instruction the model reads, and the app's own text keeps its place (and its
    prompt-cache prefix)."""
    if own is None or (isinstance(own, str) and not own.strip()):
        return instruction
    if isinstance(own, str):
        return own + "\n\n" + instruction
    return None


def inject(body: dict[str, Any], settings: InjectSettings) -> tuple[dict[str, Any], bool]:
    """The request to forward, and whether ragtap asked the upstream for a usage chunk the app did not ask for.

    The instruction goes last, as a system message: after the app's own prompt it is the most recent
    instruction the model reads, and it leaves the app's messages untouched.
    """
    out = without_ragtap_field(body)
    out["messages"] = [*body["messages"], {"role": "system", "content": prompt_text(settings.prompt)}]
    if settings.json_response_format:
        out["response_format"] = {"type": "json_object"}
    added_usage = False
    # (a `stream_options` that is not an object is the app's to get wrong: left for the upstream to reject)
    if out.get("stream") is True and settings.stream_usage and isinstance(out.get("stream_options") or {}, dict):
        options = dict(out.get("stream_options") or {})
        if not options.get("include_usage"):
            options["include_usage"] = True
            added_usage = True
        out["stream_options"] = options
    return out, added_usage
