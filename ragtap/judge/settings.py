"""The `[judge]` section of config.toml: where the LLM judge is, what it may spend, and the online policy.

A plain frozen dataclass, like the other sections, so `ragtap.config` can load it with its generic coercion
(str, int, float, bool, optional str, tuple of str).  Nothing here reads files or the environment except
`endpoint()`, which reads the key from the variable `api_key_env` names (never stored in the config).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtap.judge.client import JudgeEndpoint

# ragtap.judge.ragas.METRIC_NAMES, repeated here so that loading the config imports nothing heavy
METRIC_NAMES: tuple[str, ...] = ("faithfulness", "answer_relevance", "context_relevance")


@dataclass(frozen=True)
class JudgeSettings:
    # -- the endpoint (offline `ragtap judge` and the online judge)
    enabled: bool = False  # the online judge policy in the proxy; `ragtap judge` works regardless
    base_url: str | None = None  # default: the proxy's upstream ([server] upstream)
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"  # the name of the variable holding the key, never the key itself
    json_mode: bool = True  # ask for response_format json_object
    temperature: float = 0.0
    max_tokens: int = 1024  # completion cap per judge call; 0 = not sent
    timeout_s: float = 60.0
    max_retries: int = 4  # on 429 / 5xx / connection errors, exponential backoff
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    concurrency: int = 4  # judge calls in flight
    questions: int = 3  # n of answer relevance
    metrics: tuple[str, ...] = METRIC_NAMES
    # -- the online policy
    sample_rate: float = 0.01  # share of `grounded` interactions judged too (the others always are)
    calls_per_second: float = 1.0  # token-bucket rate of judge calls
    burst_calls: int = 16  # bucket size (>= the calls of one judgement, else nothing is ever judged)
    daily_token_budget: int = 2_000_000  # judge tokens per UTC day; 0 = unlimited
    max_in_flight: int = 8  # judgements running at once; more are skipped ("busy")
    seed: int | None = None  # sampling RNG seed (None: random)

    def endpoint(self, upstream: str, environ: dict[str, str] | None = None) -> JudgeEndpoint:
        from ragtap.judge.client import JudgeEndpoint

        env = os.environ if environ is None else environ
        return JudgeEndpoint(
            base_url=self.base_url or upstream,
            model=self.model,
            api_key=env.get(self.api_key_env) or None,
            json_mode=self.json_mode,
            temperature=self.temperature,
            max_tokens=self.max_tokens or None,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s,
            backoff_max_s=self.backoff_max_s,
            concurrency=self.concurrency,
        )


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge-endpoint flags shared by `ragtap judge` and `ragtap experiment wikieval`."""
    parser.add_argument("--judge-url", help="OpenAI base URL of the judge (default: [judge] base_url, else [server] upstream)")
    parser.add_argument("--judge-model", help="judge model (default: [judge] model)")
    parser.add_argument("--judge-key-env", help="name of the variable holding the judge's API key (default: [judge] api_key_env)")
    parser.add_argument("--questions", type=int, help="n: questions generated for answer relevance (default 3)")
    parser.add_argument("--concurrency", type=int, help="judge calls in flight (default: [judge] concurrency)")


def with_arguments(settings: JudgeSettings, args: argparse.Namespace) -> JudgeSettings:
    """`settings` with the command-line overrides applied (flags a command does not define are skipped)."""
    flags = vars(args)
    changes: dict[str, object] = {}
    for flag, field in (("judge_url", "base_url"), ("judge_model", "model"), ("judge_key_env", "api_key_env")):
        if flags.get(flag):
            changes[field] = flags[flag]
    for flag, field in (("questions", "questions"), ("concurrency", "concurrency"), ("retries", "max_retries")):
        if flags.get(flag) is not None:
            changes[field] = flags[flag]
    if flags.get("metrics"):
        changes["metrics"] = tuple(m.strip() for m in flags["metrics"].split(",") if m.strip())
    if flags.get("no_json_mode"):
        changes["json_mode"] = False
    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]
