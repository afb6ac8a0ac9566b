"""The upstream client alone: CPU per request of ragtap's client (ragtap/proxy/upstream_http.py) against aiohttp's
client set up as ragtap used it until issue 23's sixth round, alternating in one run.

    .venv/bin/python bench/upstream_client.py [--requests 20000] [--rounds 3] [--conns 32]

Layout as bench/run.py: the bench upstream on core 0, each client in a fresh process alone on core 1, posting the
1.5 KB RAG body (bench/bodies.py) at `--conns` concurrency and reading every reply whole.  Reported per round and as
medians: requests/s and CPU per request of the client process (getrusage, after a warm-up of the same size).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import bodies  # noqa: E402
from run import LOAD_CPU, PROXY_CPU, Service, free_port, log  # noqa: E402

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench", "Accept-Encoding": "identity", "User-Agent": "OpenAI/Python 1.0"}


async def _drive(one: Callable[[], Awaitable[int]], requests: int, conns: int) -> tuple[float, float]:
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while sent < requests:
            sent += 1
            await one()

    await asyncio.gather(*(worker() for _ in range(conns)))  # warm-up: connections opened, caches filled
    sent = 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0, t0 = usage.ru_utime + usage.ru_stime, time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conns)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return requests / (time.perf_counter() - t0), (usage.ru_utime + usage.ru_stime - cpu0) / requests * 1e6


async def _aiohttp_client(port: int, requests: int, conns: int) -> tuple[float, float]:
    import aiohttp
    import yarl
    from multidict import CIMultiDict

    connector = aiohttp.TCPConnector(limit=256, keepalive_timeout=4.0, ttl_dns_cache=300)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=600.0)
    body, headers = bodies.rag_body(), CIMultiDict(HEADERS)
    url = yarl.URL(f"http://127.0.0.1:{port}/v1/chat/completions")
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()) as session:
        async def one() -> int:
            response = await session.request("POST", url, headers=headers, data=body, auto_decompress=True, allow_redirects=False)
            try:
                return len(await response.read())
            finally:
                response.release()
        return await _drive(one, requests, conns)


async def _ragtap_client(port: int, requests: int, conns: int) -> tuple[float, float]:
    from multidict import CIMultiDict

    from ragtap.proxy.upstream_http import HttpClient

    http = HttpClient("127.0.0.1", port, tls=False, connect_timeout=10.0, read_timeout=600.0, keepalive=4.0, limit=256)
    body, headers = bodies.rag_body(), CIMultiDict(HEADERS)

    async def one() -> int:
        response = await http.send("POST", "/v1/chat/completions", headers, body, decompress=True)
        try:
            return len(await response.read())
        finally:
            response.release()
    try:
        return await _drive(one, requests, conns)
    finally:
        await http.close()


def _child(kind: str, port: int, requests: int, conns: int) -> None:
    import uvloop

    run = _aiohttp_client if kind == "aiohttp" else _ragtap_client
    rps, cpu_us = uvloop.run(run(port, requests, conns))
    print(json.dumps({"rps": rps, "cpu_us": cpu_us}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conns", type=int, default=32)
    parser.add_argument("--child", choices=["aiohttp", "ragtap"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.port, args.requests, args.conns)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-client-"))
    port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(port)], port, "/v1/models", cpu=LOAD_CPU)
    upstream.start(workdir)
    results: dict[str, list[dict[str, float]]] = {"aiohttp": [], "ragtap": []}
    load = [os.getloadavg()[0]]
    try:
        for round_ in range(args.rounds):
            for kind in results:
                cmd = ["taskset", "-c", str(PROXY_CPU), sys.executable, __file__, "--child", kind, "--port", str(port),
                       "--requests", str(args.requests), "--conns", str(args.conns)]
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                results[kind].append(row)
                log(f"round {round_ + 1} {kind}: {row['rps']:.0f} req/s, {row['cpu_us']:.1f} us CPU/request")
    finally:
        upstream.stop()
    load.append(os.getloadavg()[0])
    med = {kind: {k: statistics.median(r[k] for r in rows) for k in ("rps", "cpu_us")} for kind, rows in results.items()}
    ratios = [a["cpu_us"] / r["cpu_us"] for a, r in zip(results["aiohttp"], results["ragtap"])]
    print(f"c={args.conns}, {args.rounds} rounds of {args.requests} requests, load average {load[0]:.1f} -> {load[1]:.1f}")
    print(f"{'client':<9}{'req/s':>8}{'CPU us/req':>12}")
    for kind, m in med.items():
        print(f"{kind:<9}{m['rps']:>8.0f}{m['cpu_us']:>12.1f}")
    print(f"aiohttp / ragtap CPU per request, by round: {', '.join(f'{r:.2f}' for r in ratios)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
