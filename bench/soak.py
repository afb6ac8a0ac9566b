"""A bounded soak of `ragtap serve`: steady load for a while, then did anything grow or break?

    .venv/bin/python bench/soak.py                         # 60 s at 300 requests/s (the figures in docs/reliability.md)
    .venv/bin/python bench/soak.py --duration 5 --rate 100 --json /tmp/soak.json

ragtap runs as its own process (`ragtap serve`, default config unless --config: scoring on with the MiniLM
embedder, Prometheus on), in front of the fast scripted upstream (bench/upstream.py, its own process).  This
process is an open-loop aiohttp load generator: requests are started at a fixed rate (not one after the other),
at most --max-in-flight at a time, in a fixed mix:

    50 % RAG, not streamed (LangChain rag-prompt, a new question each time: recognised, injected, split, scored)
    30 % plain chat, not streamed (forwarded byte for byte)
    20 % streams, 20 content chunks each, half RAG (injected and rewritten chunk by chunk), half plain

Every response is checked (status 200; the JSON completion has content; a stream ends with `data: [DONE]`).
Reported: requests, errors, p50/p99 latency (overall and per kind, from sending the request to the end of its
response; and overall from the request's slot in the schedule, which includes waiting for a free in-flight slot
when the system cannot keep up), and ragtap's RSS, open file descriptors and
sockets and threads at the start (after a short warm-up), right after the load, and at the end (after --settle
seconds idle, 10 by default: long enough for the idle keep-alive connections to the upstream to expire), sampled
every 5 s in between; the scoring counters from /metrics; how long SIGTERM took and its exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402

KINDS = ("rag", "chat", "rag_stream", "chat_stream")
MIX = ("rag", "chat", "rag", "chat", "rag", "rag_stream", "rag", "chat", "rag", "chat_stream")  # 50/30/10/10
STREAM_CHUNKS = 20


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_stats(pid: int) -> dict[str, Any]:
    """RSS, open fds, sockets among them, threads and CPU seconds of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
    fds = os.listdir(f"/proc/{pid}/fd")
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"rss_mb": round(rss_kb / 1024, 1), "fds": len(fds), "sockets": sockets, "threads": threads, "cpu_s": round(cpu, 2)}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    from_schedule: list[float] = field(default_factory=list)  # from the request's slot, waiting for a free slot included
    errors: dict[str, int] = field(default_factory=dict)
    sent: int = 0
    done: int = 0
    late: int = 0  # requests that started more than 100 ms after their slot (the in-flight cap was full)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def wait_for_line(stream: asyncio.StreamReader, needle: str, timeout: float) -> str:
    async with asyncio.timeout(timeout):
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise RuntimeError(f"process ended before printing {needle!r}")
            if needle in line:
                return line


async def one(session: aiohttp.ClientSession, url: str, kind: str, n: int, tally: Tally, due: float) -> None:
    stream = kind.endswith("_stream")
    if kind.startswith("rag"):
        body = bodies.rag_body(stream, numbered=True, max_tokens=STREAM_CHUNKS if stream else None).replace(b"{n}", str(n).encode())
    else:
        body = bodies.chat_body(stream, numbered=True).replace(b"{n}", str(n).encode())
    started = time.perf_counter()
    try:
        async with session.post(url, data=body, headers={"Content-Type": "application/json", "Authorization": "Bearer sk-soak"}) as response:
            data = await response.read()
            if response.status != 200:
                tally.error(f"status {response.status}")
                return
        if stream:
            if not data.endswith(b"data: [DONE]\n\n"):
                tally.error("stream without [DONE]")
                return
        else:
            content = json.loads(data)["choices"][0]["message"]["content"]
            if not content or (kind == "rag" and content.lstrip().startswith("{")):
                tally.error("bad completion")
                return
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError) as error:
        tally.error(type(error).__name__)
        return
    finally:
        tally.done += 1
    tally.latencies[kind].append(time.perf_counter() - started)
    tally.from_schedule.append(time.perf_counter() - due)


async def load(url: str, duration: float, rate: float, max_in_flight: int, tally: Tally, on_tick: Any) -> None:
    connector = aiohttp.TCPConnector(limit=max_in_flight)
    slots = asyncio.Semaphore(max_in_flight)
    tasks: set[asyncio.Task[None]] = set()
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:

        async def run(kind: str, n: int, due: float) -> None:
            async with slots:
                if time.perf_counter() - due > 0.1:
                    tally.late += 1
                await one(session, url, kind, n, tally, due)

        start = time.perf_counter()
        next_tick = start + 5
        n = 0
        while True:
            now = time.perf_counter()
            if now - start >= duration:
                break
            due = start + n / rate
            if due > now:
                await asyncio.sleep(due - now)
            task = asyncio.get_running_loop().create_task(run(MIX[n % len(MIX)], n, due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
            tally.sent = n
            if time.perf_counter() >= next_tick:
                on_tick(time.perf_counter() - start)
                next_tick += 5
        if tasks:
            await asyncio.wait(tasks, timeout=30)


async def scrape(url: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("ragtap_scoring_dropped_total", "ragtap_verdicts_total", "ragtap_scoring_failed_total",
                               "ragtap_requests_total", "ragtap_exporter_errors_total", "ragtap_scoring_queue_depth"):
                out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


async def run(duration: float = 60.0, rate: float = 300.0, max_in_flight: int = 64, config: str | None = None,
              scoring: bool = True, quiet: bool = False, warmup: float = 1.0, settle: float = 10.0) -> dict[str, Any]:
    say = (lambda message: None) if quiet else log
    upstream_port, ragtap_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")}
    env["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="ragtap-soak-data-")  # the default capture store: not the real home
    upstream = await asyncio.create_subprocess_exec(sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port),
                                                    stdout=asyncio.subprocess.PIPE, env=env)
    ragtap_cmd = [str(Path(sys.executable).with_name("ragtap")), "serve", "--upstream", f"http://127.0.0.1:{upstream_port}/v1",
                  "--port", str(ragtap_port)]
    if not scoring:  # (the short test run: no embedder to load)
        config = config or str(Path(tempfile.mkdtemp(prefix="ragtap-soak-")) / "noscoring.toml")
        Path(config).write_text("[scoring]\nenabled = false\n")
    if config:
        ragtap_cmd += ["--config", config]
    ragtap = None
    try:
        await wait_for_line(upstream.stdout, "upstream ready", 30)  # type: ignore[arg-type]
        started = time.perf_counter()
        ragtap = await asyncio.create_subprocess_exec(*ragtap_cmd, stderr=asyncio.subprocess.PIPE, env=env)
        await wait_for_line(ragtap.stderr, "ragtap listening on", 60)  # type: ignore[arg-type]
        startup_s = time.perf_counter() - started
        url = f"http://127.0.0.1:{ragtap_port}/v1/chat/completions"
        warm = Tally()
        await load(url, warmup, 20, 8, warm, lambda t: None)  # warm-up: lazy imports, the embedder's first batch
        await asyncio.sleep(min(settle, 2.0))
        before = process_stats(ragtap.pid)
        say(f"ragtap up in {startup_s:.1f} s; start: {before}")
        samples: list[dict[str, Any]] = []
        tally = Tally()

        def tick(elapsed: float) -> None:
            stats = {"t": round(elapsed, 1), **process_stats(ragtap.pid), "done": tally.done}  # type: ignore[union-attr]
            samples.append(stats)
            say(f"{stats}")

        load_started = time.perf_counter()
        await load(url, duration, rate, max_in_flight, tally, tick)
        load_seconds = time.perf_counter() - load_started
        after_load = process_stats(ragtap.pid)
        await asyncio.sleep(settle)  # idle: the upstream pool's keep-alive connections expire (server.upstream_keepalive_s)
        after = process_stats(ragtap.pid)
        metrics = await scrape(f"http://127.0.0.1:{ragtap_port}/metrics")
        stopped = time.perf_counter()
        ragtap.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(ragtap.wait(), 30)
        shutdown_s = time.perf_counter() - stopped
    finally:
        for process in (ragtap, upstream):
            if process is not None and process.returncode is None:
                process.kill()
                await process.wait()

    every = [x for k in KINDS for x in tally.latencies[k]]
    ms = lambda v: None if v is None else round(v * 1000, 2)  # noqa: E731
    result = {
        "command": " ".join(["bench/soak.py", "--duration", str(duration), "--rate", str(rate), "--max-in-flight", str(max_in_flight)]),
        "duration_s": round(load_seconds, 1), "target_rate": rate, "startup_s": round(startup_s, 1),
        "requests": tally.sent, "completed": tally.done, "errors": sum(tally.errors.values()), "error_kinds": tally.errors,
        "late_starts": tally.late, "achieved_rate": round(tally.done / load_seconds, 1),
        "latency_from_schedule_ms": {"p50": ms(percentile(tally.from_schedule, 50)), "p99": ms(percentile(tally.from_schedule, 99))},
        "latency_ms": {"p50": ms(percentile(every, 50)), "p99": ms(percentile(every, 99)), "max": ms(max(every) if every else None),
                       **{kind: {"n": len(tally.latencies[kind]), "p50": ms(percentile(tally.latencies[kind], 50)),
                                 "p99": ms(percentile(tally.latencies[kind], 99))} for kind in KINDS}},
        "ragtap_start": before, "ragtap_after_load": after_load, "ragtap_end": after, "settle_s": settle, "samples": samples, "metrics": metrics,
        "shutdown": {"exit_code": code, "seconds": round(shutdown_s, 2)},
        "mean_latency_ms": ms(statistics.fmean(every)) if every else None,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--rate", type=float, default=300.0, help="requests started per second (default 300)")
    parser.add_argument("--max-in-flight", type=int, default=64, help="cap on concurrent requests (default 64)")
    parser.add_argument("--config", help="a config.toml for ragtap serve (default: built-in defaults)")
    parser.add_argument("--settle", type=float, default=10.0, help="idle seconds before the end figures (default 10)")
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args()
    result = asyncio.run(run(args.duration, args.rate, args.max_in_flight, args.config, settle=args.settle))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    ok = result["errors"] == 0 and result["shutdown"]["exit_code"] == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
