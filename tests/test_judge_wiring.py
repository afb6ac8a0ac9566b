"""The judge tier switched on from config (`[judge] enabled`), through the real proxy and its /metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import openai

from ragtap.config import load_config
from ragtap.testing.judge import generic_ragas_script, prompt_kind
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply

QUESTION = "In ibm service, what regions are bare metal servers for vpc available?"
DOCUMENT = "vcpu-based instance limits are available in all commercial aws regions"


def script() -> Any:
    judge = generic_ragas_script()

    def reply(body: dict[str, Any]) -> ScriptedReply:
        if prompt_kind(body) is not None:  # one of the Ragas prompts: the judge's call
            return judge(body)
        # The app's RAG request: a refusal, which the policy always judges.
        return ScriptedReply(json_reply("No information available in the retrieved document.", "The document is about AWS."))

    return reply


async def _metrics(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.text()


async def test_judge_enabled_in_config_judges_flagged_traffic(embedder) -> None:  # type: ignore[no-untyped-def]
    async with ScriptedUpstream(script()) as upstream:
        config = load_config(
            flags={
                "server": {"upstream": upstream.base_url, "port": 0},
                "judge": {"enabled": True, "sample_rate": 0.0, "calls_per_second": 100.0},
            },
            environ={},
        )
        async with RagtapServer(config, embedder=embedder) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            completion = await client.chat.completions.create(
                model="gpt-test",
                messages=[{"role": "user", "content": f"{DOCUMENT}\n\n{QUESTION}"}],
                extra_body={"ragtap": {"question": QUESTION, "documents": [DOCUMENT]}},
            )
            assert completion.choices[0].message.content == "No information available in the retrieved document."
            text = ""
            for _ in range(300):  # bounded: up to ~30 s (a loaded CI box) for scoring, then the judge's calls
                text = await _metrics(f"http://127.0.0.1:{server.port}/metrics")
                if 'ragtap_judge_score_count{metric="faithfulness"} 1.0' in text:
                    break
                await asyncio.sleep(0.1)
            assert 'ragtap_verdicts_total{model="gpt-test",verdict="refusal"} 1.0' in text
            assert 'ragtap_judge_judgements_total{trigger="not_grounded"} 1.0' in text
            assert 'ragtap_judge_score_count{metric="faithfulness"} 1.0' in text
            await client.close()
    kinds = {prompt_kind(r.body) for r in upstream.requests}
    assert kinds == {None, "statements", "verify", "questions", "extract"}, kinds
