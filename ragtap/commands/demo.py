"""`ragtap demo`: the thesis's Figure 3.2, live: five RAG requests through ragtap to a scripted upstream.

Needs no API key and no network: the upstream is ragtap's scripted test double on 127.0.0.1, the client is the
official openai SDK, and the embedder is the local all-MiniLM-L6-v2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ragtap.config import STORE_FILE, data_dir, load_config
from ragtap.types import PRIMARY_METRICS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="play the thesis's five examples through ragtap (offline)")
    p.add_argument("--config", help="config.toml (thresholds, embedder)")
    p.add_argument("--stream", action="store_true", help="also stream each answer and show it arrives clean")
    p.set_defaults(func=run)


COLUMNS = ("sdq", "sdrd", "sda", "qrd", "qa")


async def play(config, stream: bool = False) -> list[dict]:  # type: ignore[no-untyped-def]
    """Send the five cases through a fresh ragtap; return one row per case (scores, verdict, the app's answer)."""
    import openai

    from ragtap.demo.cases import thesis_cases, thesis_script
    from ragtap.proxy.server import RagtapServer
    from ragtap.testing.upstream import ScriptedUpstream

    rows = []
    async with ScriptedUpstream(thesis_script) as upstream:
        config = _with(config, upstream=upstream.base_url)
        async with RagtapServer(config) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="demo-no-key-needed", max_retries=0)
            for case in thesis_cases():
                messages = [
                    {"role": "system", "content": "Answer the question from the retrieved documents."},
                    {"role": "user", "content": f"Documents:\n{chr(10).join(case.retrieved)}\n\nQuestion: {case.question}"},
                ]
                raw = await client.chat.completions.with_raw_response.create(
                    model="thesis-gpt-3.5-turbo",
                    messages=messages,
                    extra_body={"ragtap": {"question": case.question, "documents": list(case.retrieved)}},
                    extra_headers={"x-ragtap-debug": "1"},
                )
                completion = raw.parse()
                streamed = None
                if stream:
                    parts = []
                    async for chunk in await client.chat.completions.create(
                        model="thesis-gpt-3.5-turbo", messages=messages, stream=True,
                        extra_body={"ragtap": {"question": case.question, "documents": list(case.retrieved)}},
                    ):
                        if chunk.choices and chunk.choices[0].delta.content:
                            parts.append(chunk.choices[0].delta.content)
                    streamed = "".join(parts)
                rows.append(
                    {
                        "case": case,
                        "answer": completion.choices[0].message.content,
                        "streamed": streamed,
                        "verdict": raw.headers.get("x-ragtap-verdict"),
                        "poor_retrieval": raw.headers.get("x-ragtap-poor-retrieval") == "true",
                        "scores": json.loads(raw.headers.get("x-ragtap-scores", "{}")),
                    }
                )
    return rows


def _with(config, *, upstream: str):  # type: ignore[no-untyped-def]
    import dataclasses

    server = dataclasses.replace(config.server, upstream=upstream, host="127.0.0.1", port=0)
    # The demo's own metrics stay in-process: no /metrics listener on a fixed port.
    prometheus = dataclasses.replace(config.prometheus, listen_port=None)
    # A demo leaves nothing behind: no capture store in the user's data directory (one the --config names is kept).
    store = config.store
    if store.path == str(data_dir() / STORE_FILE):
        store = dataclasses.replace(store, path="")
    return dataclasses.replace(config, server=server, prometheus=prometheus, store=store)


def format_table(rows: list[dict], thresholds) -> str:  # type: ignore[no-untyped-def]
    head = f"{'#':<2} {'question':<52} " + " ".join(f"{m.upper():>10}" for m in COLUMNS) + f"  {'verdict':<19} {'poor retr.':<10} thesis reading"
    lines = [head, "-" * len(head)]
    for i, row in enumerate(rows, 1):
        case = row["case"]
        cells = []
        for metric in COLUMNS:
            value = row["scores"].get(metric)
            mark = "pass" if value is not None and value >= thresholds.of(metric) else "FAIL"
            cells.append(f"{value:5.2f} {mark}" if value is not None else f"{'-':>10}")
        question = case.question if len(case.question) <= 52 else case.question[:49] + "..."
        lines.append(f"{i:<2} {question:<52} " + " ".join(f"{c:>10}" for c in cells) + f"  {row['verdict'] or '?':<19} {str(row['poor_retrieval']).lower():<10} {case.reading}")
    limits = ", ".join(f"{m.upper()} >= {thresholds.of(m):.2f}" for m in COLUMNS)
    lines.append("")
    lines.append(f"thresholds (all-MiniLM-L6-v2, calibrated; see docs/thresholds.md): {limits}")
    lines.append(f"primary metrics: {', '.join(m.upper() for m in PRIMARY_METRICS)}; QRD below its threshold = poor retrieval")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    started = time.perf_counter()
    print("ragtap demo: the thesis's five examples (Figure 3.2) through ragtap, scripted upstream on 127.0.0.1, no network\n")
    rows = asyncio.run(play(config, stream=args.stream))
    print(format_table(rows, config.thresholds))
    print()
    for i, row in enumerate(rows, 1):
        print(f"{i}. the app received: {row['answer']!r}")
        if row["streamed"] is not None:
            same = "identical" if row["streamed"] == row["answer"] else "DIFFERENT"
            print(f"   streamed: {row['streamed']!r} ({same})")
    print(f"\n({time.perf_counter() - started:.1f} s, including loading the embedding model)")
    return 0
