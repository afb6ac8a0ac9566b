"""The hostile soak (issue 13): normal traffic keeps its latency while slow clients, endless upstream replies and
document bombs hit the same `ragtap serve`; afterwards RSS and file descriptors are back to their baseline.

    .venv/bin/python bench/hostile_soak.py                 # 30 s calm, 60 s hostile, in 3 cycles (docs/reliability.md)
    .venv/bin/python bench/hostile_soak.py --calm 6 --hostile 12 --cycles 2 --json /tmp/h.json

Processes, all on 127.0.0.1: the fast bench upstream with an endless mode (`--role upstream`: bench/upstream.py,
plus model "endless" -> a reply that never ends, bounded at 256 MiB), `ragtap serve` (default config, scoring on
with MiniLM, plus short client timeouts so that slow clients are closed within the run: `[clients]
header_timeout_s = body_timeout_s = 5`, `idle_timeout_s = 10`), the normal load generator (this process), and the
attacker (`--role attacker`, its own process so that its work does not slow the load generator's loop).

Phases: warm-up; then `--cycles` pairs of windows, **calm** (normal traffic alone: the unloaded p99, measured in
the same run) and **hostile** (the same normal traffic plus a fresh attacker; measured from 3 s into the attack),
alternating so that the machine's other load drifts into both alike; settle (idle: the upstream pool's
keep-alives expire); SIGTERM.

Normal traffic is bench/soak.py's mix (50 % RAG, 30 % chat, 20 % streams, half RAG) at --rate, open loop.  The
attacker runs, until the hostile phase ends (every loop bounded by that deadline):
- `--slow-headers` connections sending one header line every 2 s (never finishing), reopened when closed;
- `--slow-bodies` requests whose body arrives one byte a second;
- `--endless` loops asking for an endless reply (alternately JSON and SSE; ~1.3 MB/s each), reading 8 MiB of it,
  then hanging up;
- one loop sending a document bomb (a RAG request with 30,000 documents, ~1.9 MB) every 2 s.

Pass criteria (exit code 0): 0 normal requests lost or wrong; hostile p99 < 3x calm p99; at the end ragtap's open
fds within 5 of the baseline and RSS within 10 % (or 30 MB) of the RSS after the calm phase (normal traffic alone
grows the embedding cache: that is not the attack's doing); SIGTERM exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import soak  # noqa: E402  (bench/soak.py: the normal mix, process stats, percentiles)

ENDLESS_CAP = 256 << 20  # the endless upstream stops there whatever happens (a bound, never reached in a run)
ENDLESS_READ = 8 << 20  # the attacker reads this much of an endless reply, then hangs up
# The endless upstream writes 64 KiB every ENDLESS_PAUSE_S (~1.3 MB/s per reply: ~300,000 tokens a second, far beyond
# any model).  Unthrottled, 4 such replies move ~100 MB/s through ragtap's one event loop, which then has no time left
# for anything else, with or without the limits: that is CPU, not a leak, and no LLM upstream can do it.
ENDLESS_PAUSE_S = 0.05
HEAD = b'{"id":"e","object":"chat.completion","created":1,"model":"endless","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'


# ----------------------------------------------------------------------------------------------- the upstream
async def _endless(request: web.BaseRequest, stream: bool) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream" if stream else "application/json"})
    await response.prepare(request)
    sent = 0
    if stream:
        head = {"id": "e", "object": "chat.completion.chunk", "created": 1, "model": "endless",
                "choices": [{"index": 0, "delta": {"content": '{"answer": "'}, "finish_reason": None}]}
        first = b"data: " + json.dumps(head).encode() + b"\n\n"
        piece = b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {"content": "x" * 8192}, "finish_reason": None}]}).encode() + b"\n\n"
        chunk, data = piece * 7, first
    else:
        chunk, data = b"x" * 65536, HEAD
    try:
        await response.write(data)
        while sent < ENDLESS_CAP:
            await response.write(chunk)
            sent += len(chunk)
            await asyncio.sleep(ENDLESS_PAUSE_S)
        await response.write_eof()
    except ConnectionError:  # ragtap hung up (the app did)
        pass
    return response


async def _serve_upstream(port: int) -> None:
    import upstream as fast  # bench/upstream.py

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if request.method == "POST":
            raw = await request.read()  # (kept by aiohttp: fast.handle reads it again)
            if b'"model":"endless"' in raw:
                return await _endless(request, b'"stream":true' in raw)
        return await fast.handle(request)

    server = web.Server(handle, access_log=None)
    listener = await asyncio.get_running_loop().create_server(server, "127.0.0.1", port, backlog=1024, reuse_address=True)
    print(f"upstream ready on http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1", flush=True)
    await asyncio.Event().wait()


# ----------------------------------------------------------------------------------------------- the attacker
async def _slow_headers(port: int, deadline: float, tally: dict[str, int]) -> None:
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            tally["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        tally["slow_header_connections"] += 1
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        n = 0
        while time.monotonic() < deadline:
            try:
                data = await asyncio.wait_for(reader.read(1024), 2.0)
            except TimeoutError:
                n += 1
                writer.write(f"X-Slow-{n}: {n}\r\n".encode())
                continue
            except OSError:
                data = b""
            if not data:
                tally["slow_headers_closed_by_ragtap"] += 1
                break
        writer.close()


async def _slow_body(port: int, deadline: float, tally: dict[str, int]) -> None:
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            tally["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        tally["slow_body_requests"] += 1
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        while time.monotonic() < deadline:
            try:
                data = await asyncio.wait_for(reader.read(4096), 1.0)
            except TimeoutError:
                writer.write(b" ")
                continue
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 408"):
                tally["slow_body_408"] += 1
            break
        writer.close()


async def _endless_loop(url: str, deadline: float, stream: bool, tally: dict[str, int]) -> None:
    body = {"model": "endless", "stream": stream, "messages": [{"role": "user", "content": "Tell me everything."}],
            "ragtap": {"question": "Tell me everything.", "documents": ["Everything is a long story."]}}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while time.monotonic() < deadline:
            received = 0
            try:
                async with session.post(url, json=body) as response:
                    while received < ENDLESS_READ and time.monotonic() < deadline:
                        data = await response.content.read(1 << 20)
                        if not data:
                            break
                        received += len(data)
                    tally["endless_bytes"] += received
                    tally["endless_replies"] += 1
                    response.close()  # hang up
            except (aiohttp.ClientError, TimeoutError):
                tally["endless_errors"] += 1


async def _bombs(url: str, deadline: float, every_s: float, tally: dict[str, int]) -> None:
    documents = [f"Document {i}: the warehouse in region {i % 97} ships parcels on weekdays." for i in range(30_000)]
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "When does the warehouse ship?"}],
                       "ragtap": {"question": "When does the warehouse ship?", "documents": documents}}).encode()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while time.monotonic() < deadline:
            try:
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                    await response.read()
                    tally["bombs_answered" if response.status == 200 else f"bomb_status_{response.status}"] += 1
            except (aiohttp.ClientError, TimeoutError):
                tally["bomb_errors"] += 1
            await asyncio.sleep(every_s)


async def _attack(port: int, seconds: float, slow_headers: int, slow_bodies: int, endless: int, bombs_every_s: float) -> dict[str, int]:
    from collections import defaultdict

    tally: dict[str, int] = defaultdict(int)
    deadline = time.monotonic() + seconds
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    tasks = [_slow_headers(port, deadline, tally) for _ in range(slow_headers)]
    tasks += [_slow_body(port, deadline, tally) for _ in range(slow_bodies)]
    tasks += [_endless_loop(url, deadline, i % 2 == 1, tally) for i in range(endless)]
    if bombs_every_s > 0:
        tasks.append(_bombs(url, deadline, bombs_every_s, tally))
    await asyncio.wait_for(asyncio.gather(*tasks), seconds + 90)
    return dict(tally)


# ----------------------------------------------------------------------------------------------- the conductor
RAMP_S = 3.0


def _merge(into: soak.Tally, window: soak.Tally) -> None:
    for kind in soak.KINDS:
        into.latencies[kind] += window.latencies[kind]
    into.from_schedule += window.from_schedule
    for what, n in window.errors.items():
        into.errors[what] = into.errors.get(what, 0) + n
    into.sent += window.sent
    into.done += window.done
    into.late += window.late


def _summary(tally: soak.Tally) -> dict[str, Any]:
    every = [x for k in soak.KINDS for x in tally.latencies[k]]
    ms = lambda v: None if v is None else round(v * 1000, 2)  # noqa: E731
    return {"sent": tally.sent, "completed": tally.done, "errors": sum(tally.errors.values()), "error_kinds": tally.errors,
            "p50_ms": ms(soak.percentile(every, 50)), "p99_ms": ms(soak.percentile(every, 99)), "max_ms": ms(max(every) if every else None),
            "p99_from_schedule_ms": ms(soak.percentile(tally.from_schedule, 99))}


async def run(calm: float, hostile: float, rate: float, max_in_flight: int, slow_headers: int, slow_bodies: int, endless: int,
              bombs_every_s: float, settle: float, cycles: int, scoring: bool = True) -> dict[str, Any]:
    upstream_port, ragtap_port = soak.free_port(), soak.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")}
    env["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="ragtap-hostile-data-")  # the default capture store: not the real home
    me = str(Path(__file__).resolve())
    upstream = await asyncio.create_subprocess_exec(sys.executable, me, "--role", "upstream", "--port", str(upstream_port),
                                                    stdout=asyncio.subprocess.PIPE, env=env)
    config = Path(tempfile.mkdtemp(prefix="ragtap-hostile-")) / "ragtap.toml"
    # Short client timeouts and a 1 MiB reply limit, so that slow clients are closed and endless JSON replies are
    # streamed through many times within the run (the defaults are 10/60/60 s and 16 MiB).
    config.write_text("[clients]\nheader_timeout_s = 5.0\nbody_timeout_s = 5.0\nidle_timeout_s = 10.0\n"
                      "[replies]\nmax_body_bytes = 1048576\n" + ("" if scoring else "[scoring]\nenabled = false\n"))
    # `python -m ragtap` with this checkout first on the path: the code measured is this tree's, whatever is installed.
    ragtap_env = {**env, "PYTHONPATH": str(BENCH.parent)}
    ragtap_cmd = [sys.executable, "-m", "ragtap", "serve", "--upstream", f"http://127.0.0.1:{upstream_port}/v1",
                  "--port", str(ragtap_port), "--config", str(config)]
    ragtap = attacker = None
    try:
        await soak.wait_for_line(upstream.stdout, "upstream ready", 30)  # type: ignore[arg-type]
        ragtap = await asyncio.create_subprocess_exec(*ragtap_cmd, stderr=asyncio.subprocess.PIPE, env=ragtap_env, cwd=str(BENCH.parent))
        await soak.wait_for_line(ragtap.stderr, "ragtap listening on", 90)  # type: ignore[arg-type]
        url = f"http://127.0.0.1:{ragtap_port}/v1/chat/completions"
        await soak.load(url, 2.0, 20, 8, soak.Tally(), lambda t: None)  # warm-up
        await asyncio.sleep(2.0)
        baseline = soak.process_stats(ragtap.pid)
        soak.log(f"baseline: {baseline}")

        # Calm and hostile windows alternate (`cycles` of each), so that the load the machine's other users put on it
        # drifts into both measurements alike; the attacker is a fresh process for each hostile window.
        calm_tally, hostile_tally = soak.Tally(), soak.Tally()
        samples: list[dict[str, Any]] = []
        attack: dict[str, int] = {}
        after_calm: dict[str, Any] = {}
        clock = time.perf_counter()

        def tick(elapsed: float) -> None:
            samples.append({"t": round(time.perf_counter() - clock, 1), **soak.process_stats(ragtap.pid)})  # type: ignore[union-attr]
            soak.log(f"{samples[-1]}")

        for cycle in range(cycles):
            window = soak.Tally()
            await soak.load(url, calm / cycles, rate, max_in_flight, window, lambda t: None)
            _merge(calm_tally, window)
            soak.log(f"calm {cycle + 1}/{cycles}: {_summary(window)}")
            if not after_calm:
                await asyncio.sleep(2.0)
                after_calm = soak.process_stats(ragtap.pid)  # the RSS baseline: normal traffic grows the embedding cache too
                soak.log(f"after the first calm window: {after_calm}")
            # The attacker runs at nice 10: in a real deployment it is on other machines, and here its own CPU (reading
            # endless replies, hundreds of sockets) would otherwise be taken from ragtap's 2 shared cores.
            attacker = await asyncio.create_subprocess_exec(
                "nice", "-n", "10", sys.executable, me, "--role", "attacker", "--port", str(ragtap_port), "--hostile", str(hostile / cycles),
                "--slow-headers", str(slow_headers), "--slow-bodies", str(slow_bodies), "--endless", str(endless), "--bombs-every", str(bombs_every_s),
                stdout=asyncio.subprocess.PIPE, env=env)
            await asyncio.sleep(RAMP_S)  # the attack under way before the measurement starts
            window = soak.Tally()
            await soak.load(url, hostile / cycles - RAMP_S, rate, max_in_flight, window, tick)
            _merge(hostile_tally, window)
            attack_out, _ = await asyncio.wait_for(attacker.communicate(), 120)
            for key, value in json.loads(attack_out.decode().strip().splitlines()[-1]).items():
                attack[key] = attack.get(key, 0) + value
            soak.log(f"hostile {cycle + 1}/{cycles}: {_summary(window)}")
        peak = {key: max(s[key] for s in samples) for key in ("rss_mb", "fds", "sockets")} if samples else {}
        soak.log(f"attack: {attack}")
        await asyncio.sleep(settle)
        end = soak.process_stats(ragtap.pid)
        metrics = await _scrape(f"http://127.0.0.1:{ragtap_port}/metrics")
        ragtap.send_signal(signal.SIGTERM)
        stopped = time.perf_counter()
        code = await asyncio.wait_for(ragtap.wait(), 30)
        shutdown_s = time.perf_counter() - stopped
    finally:
        for process in (attacker, ragtap, upstream):
            if process is not None and process.returncode is None:
                process.kill()
                await process.wait()

    calm_s, hostile_s = _summary(calm_tally), _summary(hostile_tally)
    ratio = hostile_s["p99_ms"] / calm_s["p99_ms"] if calm_s["p99_ms"] and hostile_s["p99_ms"] else None
    rss_ok = end["rss_mb"] <= max(after_calm["rss_mb"] * 1.10, after_calm["rss_mb"] + 30)
    fds_ok = end["fds"] <= baseline["fds"] + 5
    return {
        "command": f"bench/hostile_soak.py --calm {calm:g} --hostile {hostile:g} --rate {rate:g} --slow-headers {slow_headers} "
                   f"--slow-bodies {slow_bodies} --endless {endless} --bombs-every {bombs_every_s:g} --cycles {cycles}" + ("" if scoring else " --no-scoring"),
        "calm": calm_s, "hostile": hostile_s, "p99_ratio": None if ratio is None else round(ratio, 2), "attack": attack,
        "ragtap_baseline": baseline, "ragtap_after_calm": after_calm, "ragtap_peak_during_attack": peak, "ragtap_end": end, "samples": samples, "metrics": metrics,
        "shutdown": {"exit_code": code, "seconds": round(shutdown_s, 2)},
        "pass": {"no_normal_request_lost": calm_s["errors"] == 0 and hostile_s["errors"] == 0 and hostile_s["completed"] == hostile_s["sent"],
                 "p99_under_3x": ratio is not None and ratio < 3.0, "rss_back": rss_ok, "fds_back": fds_ok, "sigterm_exit_0": code == 0},
    }


async def _scrape(url: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("ragtap_client_rejections_total", "ragtap_unscored_total", "ragtap_scoring_dropped_total"):
                key = f"{sample.name}{{{sample.labels.get('reason', '')}}}"
                out[key] = out.get(key, 0.0) + sample.value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("conductor", "upstream", "attacker"), default="conductor")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--calm", type=float, default=30.0, help="seconds of normal traffic alone, in all (default 30)")
    parser.add_argument("--hostile", type=float, default=60.0, help="seconds of attack, in all (default 60)")
    parser.add_argument("--rate", type=float, default=100.0, help="normal requests started per second (default 100)")
    parser.add_argument("--max-in-flight", type=int, default=32)
    parser.add_argument("--slow-headers", type=int, default=300, help="slowloris connections kept open (default 300)")
    parser.add_argument("--slow-bodies", type=int, default=50, help="requests with a trickling body kept going (default 50)")
    parser.add_argument("--endless", type=int, default=4, help="concurrent endless-reply loops (default 4)")
    parser.add_argument("--bombs-every", type=float, default=2.0, help="seconds between document bombs, 0: none (default 2)")
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--no-scoring", action="store_true", help="ragtap without scoring (to see the scoring thread's share)")
    parser.add_argument("--cycles", type=int, default=3, help="calm/hostile window pairs the phases are cut into (default 3)")
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args()
    if args.role == "upstream":
        asyncio.run(_serve_upstream(args.port))
        return
    if args.role == "attacker":
        print(json.dumps(asyncio.run(_attack(args.port, args.hostile, args.slow_headers, args.slow_bodies, args.endless, args.bombs_every))), flush=True)
        return
    result = asyncio.run(run(args.calm, args.hostile, args.rate, args.max_in_flight, args.slow_headers, args.slow_bodies, args.endless,
                             args.bombs_every, args.settle, args.cycles, not args.no_scoring))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    sys.exit(0 if all(result["pass"].values()) else 1)


if __name__ == "__main__":
    main()
