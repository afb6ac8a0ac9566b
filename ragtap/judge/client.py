"""The judge endpoint: chat completions through the official `openai` AsyncOpenAI client, with ragtap's own
concurrency limit, retries with exponential backoff, and token accounting from `usage`.

The SDK's built-in retries are turned off (`max_retries=0`) so that every attempt is counted and the policy is
explicit: 429, 408, 409, 5xx and connection errors (timeouts included) are retried up to `max_retries` times,
waiting `min(backoff_max_s, backoff_base_s * 2**attempt)` scaled by a jitter factor in [0.5, 1], or the server's
`Retry-After` when it sends one (capped the same way).  Other 4xx are not retried: the request itself is wrong.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ragtap.judgement import Usage
from ragtap.retry import backoff, retryable

log = logging.getLogger("ragtap.judge")

@dataclass(frozen=True)
class JudgeEndpoint:
    """Where and how to call the judge.  `api_key` is the key itself (read from the variable the config names)."""

    base_url: str
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    json_mode: bool = True  # response_format {"type": "json_object"}; turn off for servers without it
    temperature: float | None = 0.0
    max_tokens: int | None = 1024  # completion cap per call (sent as max_tokens); None/0 = not sent
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    concurrency: int = 8  # judge calls in flight at once


class JudgeCallError(Exception):
    """A judge call that failed for good; `reason` is short and safe to log (no key, no content)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JudgeClient:
    """Sends judge prompts; one instance per endpoint, shared by every metric and row.

    `client` replaces the AsyncOpenAI client (tests); `sleep` and `jitter` replace `asyncio.sleep` and
    `random.random` (tests).  `usage` accumulates over the client's life; `complete` also adds each call to the
    `usage` it is given (one judgement's share).
    """

    def __init__(
        self,
        endpoint: JudgeEndpoint,
        *,
        client: Any = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = endpoint
        if client is None:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(
                base_url=endpoint.base_url,
                api_key=endpoint.api_key or "ragtap-no-key",  # keyless local servers; a real API answers 401
                max_retries=0,
                timeout=endpoint.timeout_s,
            )
        self._client = client
        self._sleep = sleep
        self._jitter = jitter
        self._semaphore = asyncio.Semaphore(max(1, endpoint.concurrency))
        self.usage = Usage()

    @property
    def model(self) -> str:
        return self.endpoint.model

    def _request(self, system: str, user: str) -> dict[str, Any]:
        e = self.endpoint
        request: dict[str, Any] = {
            "model": e.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if e.temperature is not None:
            request["temperature"] = e.temperature
        if e.max_tokens:
            request["max_tokens"] = e.max_tokens
        if e.json_mode:
            request["response_format"] = {"type": "json_object"}
        return request

    def backoff(self, attempt: int, error: Exception | None = None) -> float:
        return backoff(attempt, self.endpoint.backoff_base_s, self.endpoint.backoff_max_s, error, self._jitter)

    async def complete(self, system: str, user: str, usage: Usage | None = None) -> str:
        """The text of the judge's reply.  Raises JudgeCallError when the call fails for good."""
        import openai

        share = Usage()
        request = self._request(system, user)
        try:
            for attempt in range(self.endpoint.max_retries + 1):
                try:
                    async with self._semaphore:
                        response = await self._client.chat.completions.create(**request)
                except openai.APIError as error:  # HTTP statuses and connection errors (timeouts included)
                    if retryable(error) and attempt < self.endpoint.max_retries:
                        share.retries += 1
                        await self._sleep(self.backoff(attempt, error))
                        continue
                    share.failed += 1
                    if isinstance(error, openai.APIStatusError):
                        raise JudgeCallError(f"judge HTTP {error.status_code}") from error
                    raise JudgeCallError(f"judge unreachable ({type(error).__name__})") from error
                share.calls += 1
                if response.usage is not None:
                    share.prompt_tokens += int(response.usage.prompt_tokens or 0)
                    share.completion_tokens += int(response.usage.completion_tokens or 0)
                else:
                    share.missing_usage += 1
                if not response.choices:
                    raise JudgeCallError("judge reply has no choices")
                return response.choices[0].message.content or ""
            raise JudgeCallError("judge retries exhausted")  # not reached: the loop returns or raises
        finally:
            self.usage.add(share)
            if usage is not None:
                usage.add(share)

    async def close(self) -> None:
        close = getattr(self._client, "close", None)
        if close is not None:
            await close()
