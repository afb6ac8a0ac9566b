"""When and how long to retry a call made with the openai SDK: one rule for every caller (the LLM judge, the
experiments' generation).  Each caller keeps its own loop, because each does something of its own between
attempts (the judge counts retries for its cost report; generation gives every attempt a new trace id), but the
decision and the delay are made here.

The SDK's own `max_retries` is turned off (0) by those callers for exactly that reason.
"""

from __future__ import annotations

import random
from collections.abc import Callable

RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 425, 429})


def retryable(error: BaseException) -> bool:
    """Connection failures, timeouts, 408/409/425/429 and 5xx: worth another try.  Auth, not-found and other
    4xx are not (the same request will fail the same way)."""
    import asyncio

    import openai

    if isinstance(error, openai.APIConnectionError | asyncio.TimeoutError):  # APITimeoutError is a connection error
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    return False


def retry_after(error: BaseException) -> float | None:
    """The server's `Retry-After` in seconds, when it sent one."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def backoff(attempt: int, base_s: float, max_s: float, error: BaseException | None = None, jitter: Callable[[], float] = random.random) -> float:
    """Seconds to wait before attempt `attempt + 1`: the server's Retry-After when given, else exponential with
    jitter (50-100% of base * 2^attempt), never more than `max_s`."""
    hinted = retry_after(error) if error is not None else None
    if hinted is not None:
        return min(max_s, hinted)
    return min(max_s, base_s * (2**attempt)) * (0.5 + 0.5 * jitter())
