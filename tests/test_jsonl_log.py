"""The JSONL interaction log through the proxy: one line per interaction, on disk while ragtap runs (not only at
shutdown), with the time, trace id, latency, tokens, user and session of each exchange."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import openai

from ragtap.config import load_config
from ragtap.demo.cases import thesis_cases, thesis_script
from ragtap.exporters.jsonl import JsonlExporter
from ragtap.proxy.server import RagtapServer
from ragtap.records import interaction_from_record
from ragtap.testing.upstream import ScriptedUpstream
from ragtap.types import Verdict

from conftest import ENV, explicit, rag_messages

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


async def test_each_interaction_is_one_line_on_disk_promptly_with_its_context(embedder, tmp_path: Path) -> None:
    path = tmp_path / "interactions.jsonl"
    log = JsonlExporter(str(path))  # the default flush_every (64) must not hold lines back
    cases = thesis_cases()
    async with ScriptedUpstream(thesis_script) as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 2.0}})
        async with RagtapServer(config, embedder=embedder, exporters=[log]) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=15)
            for n, case in enumerate(cases):
                await client.chat.completions.create(
                    model="gpt-4o-mini", messages=rag_messages(case.question, case.retrieved), user="carol",
                    metadata={"session_id": f"s{n}"}, extra_body=explicit(case.question, case.retrieved),
                    extra_headers={"traceparent": f"00-{TRACE_ID}-{n + 1:016x}-01"})
            deadline = asyncio.get_running_loop().time() + 15
            lines: list[str] = []
            while asyncio.get_running_loop().time() < deadline:  # while ragtap still runs
                lines = path.read_text().splitlines()
                if len(lines) == len(cases):
                    break
                await asyncio.sleep(0.05)
            assert len(lines) == len(cases), f"{len(lines)} of {len(cases)} lines on disk while ragtap runs"
            await client.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == len(cases)  # one line per interaction, nothing repeated at shutdown
    for record in records:
        n = int(record["session"][1:])
        assert record["question"] == cases[n].question
        assert datetime.fromisoformat(record["time"]).tzinfo is not None
        assert (record["trace_id"], record["span_id"]) == (TRACE_ID, f"{n + 1:016x}")
        assert record["latency_ms"] > 0 and record["user"] == "carol"
        assert record["tokens"]["prompt"] > 0 and record["tokens"]["supporting"] > 0 and record["tokens"]["answer"] > 0
        assert record["verdict"] in {v.value for v in Verdict if v is not Verdict.UNSCORED}
        interaction_from_record(record)  # still `ragtap score`'s input format
