"""Model pricing of ragtap's own overhead: exact ids, then dated snapshots, never a bare prefix (issue 24).

`o3-mini` and `o3-pro` are other models than `o3` (the previous longest-prefix rule priced both as `o3`); a model
the table does not know is counted as unpriced, over real HTTP: the openai SDK -> ragtap -> the scripted upstream,
read back from /metrics.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
import openai
import pytest

from ragtap.config import load_config
from ragtap.cost import DEFAULT_PRICES, CostSettings, ModelPrice, PriceTable, snapshot_of
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply, was_injected

from conftest import ANSWER, ENV, SUPPORTING, explicit, rag_messages


@pytest.mark.parametrize(("model", "priced_as"), [
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),  # OpenAI's dated snapshot
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
    ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),  # older OpenAI snapshots: month and day
    ("o3-2025-04-16", "o3"),
    ("o3-mini", None),  # another model, not o3
    ("o3-pro", None),
    ("o3-pro-2025-06-10", None),
    ("gpt-4o-realtime-preview", None),
    ("gpt-4o-2024-13-40", None),  # not a date
    ("gpt-5-codex", None),
])
def test_exact_ids_then_dated_snapshots_never_a_bare_prefix(model: str, priced_as: str | None) -> None:
    expected = None if priced_as is None else DEFAULT_PRICES[priced_as]
    assert PriceTable().price(model) == expected


def test_the_snapshot_rule_is_general_for_tables_of_any_provider() -> None:
    # Anthropic's snapshots carry YYYYMMDD; an entry added in [cost] is found the same way
    table = PriceTable(CostSettings(prices={"claude-3-5-sonnet": ModelPrice(3.0, 15.0)}))
    assert table.price("claude-3-5-sonnet-20241022") == ModelPrice(3.0, 15.0)
    assert table.price("claude-3-5-sonnet-latest") is None
    assert snapshot_of("claude-3-5-sonnet-20241022") == "claude-3-5-sonnet" and snapshot_of("o3-mini") is None
    # an exact entry wins over its snapshot's model
    table = PriceTable(CostSettings(prices={"gpt-4o-2024-05-13": ModelPrice(5.0, 15.0)}))
    assert table.price("gpt-4o-2024-05-13") == ModelPrice(5.0, 15.0) and table.price("gpt-4o-2024-08-06") == DEFAULT_PRICES["gpt-4o"]


async def metrics_when(url: str, line: str, timeout: float = 10.0) -> str:
    """/metrics once it holds `line` (the hooks run after the response), or as it is after `timeout`."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        while True:
            async with http.get(url) as response:
                text = await response.text()
            if line in text or time.monotonic() > deadline:
                return text
            await asyncio.sleep(0.05)


def injected_reply(body: dict) -> ScriptedReply:  # type: ignore[type-arg]
    return ScriptedReply(json_reply(ANSWER, SUPPORTING) if was_injected(body) else ANSWER)


async def test_an_unknown_model_is_counted_as_unpriced_not_priced_as_its_prefix(embedder) -> None:
    async with ScriptedUpstream(injected_reply) as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0}, "store": {"path": ""}})
        async with RagtapServer(config, embedder=embedder) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            for model in ("o3-mini", "o3", "o3-mini"):
                completion = await client.chat.completions.create(model=model, messages=rag_messages(), extra_body=explicit())
                assert completion.choices[0].message.content == ANSWER
            await client.close()
            metrics = await metrics_when(f"http://127.0.0.1:{server.port}/metrics", 'ragtap_overhead_unpriced_total{model="o3-mini"} 2.0')
    assert 'ragtap_overhead_unpriced_total{model="o3-mini"} 2.0' in metrics
    assert 'ragtap_overhead_cost_usd_total{model="o3-mini"}' not in metrics  # no money invented for it
    assert 'ragtap_overhead_unpriced_total{model="o3"}' not in metrics
    [o3] = [line for line in metrics.splitlines() if line.startswith('ragtap_overhead_cost_usd_total{model="o3"}')]
    assert float(o3.split()[-1]) > 0
