"""What ragtap adds to a Responses API request (`POST /v1/responses`), against a direct call in the same run.

    .venv/bin/python bench/responses.py            # 5 repeats x 200 requests per scenario, ~2 min
    .venv/bin/python bench/responses.py --quick    # 3 repeats x 60 requests
    .venv/bin/python bench/responses.py --no-scoring   # ragtap with scoring off: the request path alone

Layout (2 cores, as bench/run.py): the scripted Responses upstream (bench/responses_upstream.py) and this client
on core 0, `ragtap serve` (default config: scoring on, MiniLM embedder, Prometheus) alone on core 1.
Scenarios, each a block of sequential requests (concurrency 1) direct, then the same block through ragtap,
seconds apart (paired, so load that drifts on the shared machine does not skew the difference):
- rag: a 1.5 KB LangChain `rlm/rag-prompt` in `input` (recognised, injected, the reply split), not streamed;
- plain: a non-RAG request of the same size (its bytes are forwarded untouched);
- chat_rag / chat_rag_stream_20 / chat_rag_stream_200: the same RAG request as a chat completion (bench/bodies.py), for reference:
  the chat path's added latency measured in the same run;
- rag_stream_20 / rag_stream_200: the RAG request streamed with 20 / 200 `response.output_text.delta` events;
  time to the first answer text (the first delta event carrying text) and to the end of the stream.
After each block through ragtap the scoring queue is left to drain, so that no block shares core 1 with the
previous block's scoring.  Per repeat the p50 of each block is taken and the difference ragtap - direct computed; the figure reported is
the median over the repeats of those differences (and of the p50s themselves).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from run import BENCH_KEY, CLK_TCK, LOAD_CPU, Service, free_port, log, ragtap_service, run_async  # noqa: E402

# An event carrying answer text: a Responses delta, a chat chunk (as bench/run.py), a Messages text delta.
FIRST_TEXT = re.compile(rb'"type":"response\.output_text\.delta".{0,200}?"delta":"[^"]|"content": ?"[^"]|"type":"text_delta","text":"[^"]')


def rag_body(stream: bool, deltas: int = 20) -> bytes:
    body: dict[str, Any] = {
        "model": bodies.MODEL,
        "input": [{"role": "user", "content": bodies.rag_prompt(bodies.NUMBERED_QUESTION, bodies.DOCUMENTS)}],
        "temperature": 0.0,
        "stream": stream,
        "max_output_tokens": deltas,
    }
    return json.dumps(body).encode()


def plain_body() -> bytes:
    chat = json.loads(bodies.chat_body(numbered=True))
    return json.dumps({"model": bodies.MODEL, "instructions": chat["messages"][0]["content"], "input": chat["messages"][1]["content"]}).encode()


async def _block(url: str, template: bytes, count: int, stream: bool, extra_headers: dict[str, str] | None = None) -> list[tuple[float, float]]:
    """`count` sequential requests (after 5 warm-ups); per request (time to first answer text, time to the end)."""
    import aiohttp

    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {BENCH_KEY}", **(extra_headers or {})}
    prefix, suffix = template.split(b"{n}")
    rows: list[tuple[float, float]] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1), auto_decompress=False) as session:
        for i in range(count + 5):
            body = prefix + str(time.monotonic_ns() % 10**9).encode() + suffix
            start = time.perf_counter()
            first = None
            tail = b""
            async with session.post(url, data=body, headers=headers) as reply:
                if reply.status != 200:
                    raise RuntimeError(f"{url}: {reply.status} {(await reply.read())[:300]!r}")
                if stream:
                    async for data in reply.content.iter_any():
                        if first is None:
                            if FIRST_TEXT.search(tail + data):
                                first = time.perf_counter()
                            tail = data[-256:]
                else:
                    await reply.read()
            end = time.perf_counter()
            if i >= 5:
                rows.append(((first or end) - start, end - start))
    return rows


def wait_for_scoring(base_url: str, timeout_s: float = 60.0) -> bool:
    """Wait (bounded) until ragtap's scoring queue is empty, so the next block does not share the core with it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base_url + "/healthz", timeout=5) as reply:
            if json.loads(reply.read()).get("scoring_queue") == 0:
                time.sleep(0.2)  # the batch taken off the queue last may still be embedding
                return True
        time.sleep(0.1)
    return False


def check(base_url: str) -> None:
    """One RAG request through ragtap: the app gets the answer text, not ragtap's JSON."""
    request = urllib.request.Request(base_url + "/v1/responses", data=rag_body(False).replace(b"{n}", b"1"), headers={"Content-Type": "application/json", "Authorization": f"Bearer {BENCH_KEY}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        data = json.loads(reply.read())
    text = data["output"][0]["content"][0]["text"]
    if not text.startswith("Customers") or "supporting" in json.dumps(data):
        raise RuntimeError(f"unexpected reply through ragtap: {text[:200]}")


Scenario = tuple[str, bytes, bool]  # (path, body template with "{n}", streamed)


def measure(upstream_script: str, scenarios: dict[str, Scenario], check: Callable[[str], None], args: argparse.Namespace) -> dict[str, Any]:
    """Paired blocks, direct then through ragtap, per scenario and repeat (see the module docstring)."""
    repeats, count = (3, 60) if args.quick else (5, 200)
    os.sched_setaffinity(0, {LOAD_CPU})
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-" + upstream_script.split("_")[0] + "-"))
    port = free_port()
    upstream = Service(upstream_script.removesuffix(".py"), [sys.executable, str(BENCH / upstream_script), "--port", str(port)], port, "/v1/models",
                       cpu=LOAD_CPU)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in scenarios}
    load_start = os.getloadavg()[0]
    ragtap = None
    try:
        upstream.start(workdir)
        ragtap = ragtap_service("ragtap", upstream, workdir, scoring=not args.no_scoring).start(workdir)
        check(ragtap.url)
        for repeat in range(repeats):
            log(f"repeat {repeat + 1}/{repeats}")
            for name, (path, template, stream) in scenarios.items():
                direct = run_async(_block(upstream.url + path, template, count, stream))
                ticks = ragtap.cpu_ticks()
                through = run_async(_block(ragtap.url + path, template, count, stream))
                drained = wait_for_scoring(ragtap.url)
                # CPU of ragtap's process per request, its scoring included (the block's scoring finishes before the
                # next block starts, so no block pays for another's).  (Over count + 5: the warm-ups included.)
                cpu_us = (ragtap.cpu_ticks() - ticks) / CLK_TCK * 1e6 / (count + 5)
                if not drained:
                    log(f"  warning: the scoring queue did not drain after {name}")
                row = {
                    "direct_p50_ms": statistics.median(r[1] for r in direct) * 1e3,
                    "ragtap_p50_ms": statistics.median(r[1] for r in through) * 1e3,
                }
                row["added_p50_ms"] = row["ragtap_p50_ms"] - row["direct_p50_ms"]
                row["ragtap_cpu_us_per_req"] = cpu_us
                if stream:
                    row["direct_first_ms"] = statistics.median(r[0] for r in direct) * 1e3
                    row["ragtap_first_ms"] = statistics.median(r[0] for r in through) * 1e3
                    row["added_first_ms"] = row["ragtap_first_ms"] - row["direct_first_ms"]
                results[name].append(row)
    finally:
        if ragtap is not None:
            ragtap.stop()
        upstream.stop()
    summary: dict[str, Any] = {name: {key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]} for name, rows in results.items()}
    summary["_plan"] = {
        "repeats": repeats, "requests_per_block": count, "cpus": os.cpu_count(), "python": sys.version.split()[0],
        "scoring": not args.no_scoring, "load_average_start": load_start, "load_average_end": os.getloadavg()[0],
    }
    return summary


def report(summary: dict[str, Any], args: argparse.Namespace) -> None:
    print(json.dumps(summary, indent=2))
    print("\n| scenario | direct p50 (ms) | ragtap p50 (ms) | added p50 (ms) | direct first text (ms) | ragtap first text (ms) | added first text (ms) | ragtap CPU us/req |")
    print("|---|---|---|---|---|---|---|---|")
    for name, row in summary.items():
        if name.startswith("_"):
            continue
        first = [f"{row[k]:.3f}" if k in row else "" for k in ("direct_first_ms", "ragtap_first_ms", "added_first_ms")]
        print(f"| {name} | {row['direct_p50_ms']:.3f} | {row['ragtap_p50_ms']:.3f} | {row['added_p50_ms']:+.3f} | " + " | ".join(first) + f" | {row['ragtap_cpu_us_per_req']:.0f} |")
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=2))


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON summary here")
    parser.add_argument("--no-scoring", action="store_true", help="ragtap with [scoring] enabled = false: the request path alone")
    return parser.parse_args()


CHAT_SCENARIOS: dict[str, Scenario] = {  # the chat path in the same run, for reference
    "chat_rag": ("/v1/chat/completions", bodies.rag_body(numbered=True), False),
    "chat_rag_stream_20": ("/v1/chat/completions", bodies.rag_body(True, numbered=True, max_tokens=20), True),
    "chat_rag_stream_200": ("/v1/chat/completions", bodies.rag_body(True, numbered=True, max_tokens=200), True),
}


def main() -> int:
    args = arguments(__doc__.split("\n")[0])
    scenarios: dict[str, Scenario] = {
        "rag": ("/v1/responses", rag_body(False), False),
        "plain": ("/v1/responses", plain_body(), False),
        "rag_stream_20": ("/v1/responses", rag_body(True, 20), True),
        "rag_stream_200": ("/v1/responses", rag_body(True, 200), True),
        **CHAT_SCENARIOS,
    }
    report(measure("responses_upstream.py", scenarios, check, args), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
