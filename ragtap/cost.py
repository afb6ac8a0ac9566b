"""What ragtap itself costs: the tokens it adds to each RAG exchange, priced per model.

Two things are ragtap's and not the app's: the instruction it injects (input tokens: the instruction's text plus
the chat format's per-message framing) and the supporting content the model writes because of it (output tokens,
counted by the proxy with tiktoken); with the guard's retry (ragtap/guard/), the whole second request too.
`settle_overhead` turns them into an `Overhead` on the ExchangeRecord, which the exporters (Prometheus counters,
span attributes) and the capture store read.  The JSON keys around answer and
support are not counted (a handful of tokens), so the figure is a slight lower bound.

Prices are USD per million tokens, from `[cost]` (`CostSettings.prices`), with defaults for common models (their
list prices when this table was written: check your own contract).  A model id matches its exact entry, else the
entry of the model it is a dated snapshot of: the id without a trailing date stamp (`gpt-4o-2024-08-06` ->
`gpt-4o`, `gpt-4-0613` -> `gpt-4`, `claude-3-5-sonnet-20241022` -> `claude-3-5-sonnet`).  Never by bare prefix:
`o3-mini` and `o3-pro` are other models than `o3`, priced only by their own entries.  A model with no price is
counted as unpriced (its tokens still are), never priced as a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ragtap.exchange import ExchangeRecord, Overhead
from ragtap.tokens import count_tokens

# OpenAI's chat format wraps every message in a few tokens (<|start|>role ... <|end|>): 3 per message, as
# OpenAI's own token-counting recipe counts them.
MESSAGE_FRAMING_TOKENS = 3


@dataclass(frozen=True, slots=True)
class ModelPrice:
    input: float  # USD per 1M input tokens
    output: float  # USD per 1M output tokens


# Defaults: OpenAI and Anthropic list prices (USD per 1M tokens, standard tier) as published in 2025.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-5": ModelPrice(1.25, 10.00),
    "gpt-5-mini": ModelPrice(0.25, 2.00),
    "gpt-5-nano": ModelPrice(0.05, 0.40),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "o3": ModelPrice(2.00, 8.00),
    "o4-mini": ModelPrice(1.10, 4.40),
    "gpt-4-turbo": ModelPrice(10.00, 30.00),
    "gpt-3.5-turbo": ModelPrice(0.50, 1.50),
    # Anthropic list prices (USD per 1M tokens, standard tier, no prompt caching) as published in 2025; a later
    # Claude (claude-opus-4-6, claude-sonnet-5, ...) has no entry: unpriced until `[cost.prices]` names it.
    "claude-opus-4-5": ModelPrice(5.00, 25.00),
    "claude-opus-4-1": ModelPrice(15.00, 75.00),
    "claude-opus-4": ModelPrice(15.00, 75.00),
    "claude-sonnet-4-5": ModelPrice(3.00, 15.00),
    "claude-sonnet-4": ModelPrice(3.00, 15.00),
    "claude-3-7-sonnet": ModelPrice(3.00, 15.00),
    "claude-haiku-4-5": ModelPrice(1.00, 5.00),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00),
}


@dataclass(frozen=True)
class CostSettings:
    """`[cost]`: `prices` adds to (or overrides) the defaults; `enabled = false` turns the accounting off."""

    enabled: bool = True
    prices: dict[str, ModelPrice] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.enabled, tuple(sorted(self.prices.items()))))

    def table(self) -> dict[str, ModelPrice]:
        return {**DEFAULT_PRICES, **self.prices}


def prices_from_config(value: object) -> dict[str, ModelPrice]:
    """`[cost.prices]` entries: `"model" = { input = 2.5, output = 10.0 }` (USD per 1M tokens, both >= 0)."""
    if not isinstance(value, dict):
        raise ValueError("expected a table of model = { input = USD per 1M tokens, output = USD per 1M tokens }")
    prices = {}
    for model, entry in value.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise ValueError(f"{model!r}: expected {{ input = ..., output = ... }} (USD per 1M tokens)")
        numbers = [entry["input"], entry["output"]]
        if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and n >= 0 for n in numbers):
            raise ValueError(f"{model!r}: input and output must be numbers >= 0 (got {entry!r})")
        prices[str(model)] = ModelPrice(float(entry["input"]), float(entry["output"]))
    return prices


_MONTH_DAY = r"(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
# A dated snapshot's suffix: -2024-08-06 (OpenAI), -20241022 (Anthropic), -0613 (older OpenAI: month and day).
_SNAPSHOT = re.compile(rf"-(?:20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])|20\d\d{_MONTH_DAY}|{_MONTH_DAY})$")


def snapshot_of(model: str) -> str | None:
    """The model a dated snapshot id stands for (`gpt-4o-2024-08-06` -> `gpt-4o`), None when the id has no date."""
    base = _SNAPSHOT.sub("", model)
    return base if base != model and base else None


class PriceTable:
    """Looks a model's price up (exact id, then the model of a dated snapshot), remembering the answers."""

    def __init__(self, settings: CostSettings | None = None) -> None:
        self.settings = settings or CostSettings()
        self._prices = self.settings.table()
        self._found: dict[str, ModelPrice | None] = {}

    def price(self, model: str | None) -> ModelPrice | None:
        if not model:
            return None
        if model in self._found:
            return self._found[model]
        found = self._prices.get(model)
        if found is None and (base := snapshot_of(model)) is not None:
            found = self._prices.get(base)
        if len(self._found) < 1024:  # bounded: model names come from requests
            self._found[model] = found
        return found

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


@lru_cache(maxsize=64)
def instruction_tokens(instruction: str, model: str | None) -> int:
    """Input tokens the injected instruction adds: its text and its message framing (the same for every request)."""
    return count_tokens(instruction, model) + MESSAGE_FRAMING_TOKENS


def settle_overhead(record: ExchangeRecord, prices: PriceTable) -> Overhead | None:
    """ragtap's own tokens and their cost for one exchange (None when ragtap added nothing to it).  Runs after the
    response (token counting is not on the request path); the supporting tokens must be settled already."""
    retried = record.retry_input_tokens is not None or record.retry_output_tokens is not None
    if not prices.settings.enabled or (record.injected_instruction is None and not record.supporting_tokens and not retried):
        return None
    model = record.response_model or record.request_model
    # The instruction is billed with the prompt when the upstream answered; an error reply bills nothing.
    billed = record.injected_instruction is not None and record.status == 200
    input_tokens = instruction_tokens(record.injected_instruction, model) if billed else 0
    output_tokens = record.supporting_tokens or 0
    # The guard's retry (ragtap/guard/) is a whole second request ragtap made: all its tokens are ragtap's.
    input_tokens += record.retry_input_tokens or 0
    output_tokens += record.retry_output_tokens or 0
    record.overhead = Overhead(model, input_tokens, output_tokens, prices.cost(model, input_tokens, output_tokens))
    return record.overhead
