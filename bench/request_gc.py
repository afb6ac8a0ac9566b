"""What the cyclic garbage collector costs ragtap's event loop at c=32, two checkouts in turn (issue 23).

    .venv/bin/python bench/request_gc.py --baseline-src /path/to/previous/checkout [--seconds 6] [--rounds 3]

Layout as bench/request_ab.py (2 cores): the bench upstream and wrk on core 0, `ragtap serve` (default config) alone
on core 1, from this checkout or `--baseline-src` in turn, a fresh process per round and body.  The server runs with
`bench/gc_probe/` on PYTHONPATH: its `sitecustomize` times every collection of the main thread (thread CPU time
between `gc.callbacks`' start and stop) and writes the totals when sent SIGUSR2, before and after each wrk run.
Reported, median over rounds: requests/s, the event loop's CPU per request, the collections per 1,000 requests,
the objects they freed per request (cyclic garbage: what reference counting could not free) and their share of the
event loop's CPU.  Callgrind (`request_instructions.py`) barely sees this cost: a collection runs few instructions,
but over objects that went cold in the cache hundreds of requests ago.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from run import CLK_TCK, LOAD_CPU, Service, _ticks, free_port, log, wrk, write_lua  # noqa: E402

PROBE = BENCH / "gc_probe"


def ragtap(source: Path, upstream: Service, report: Path) -> Service:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    env.update(PYTHONPATH=f"{source}{os.pathsep}{PROBE}", RAGTAP_BENCH_GC_REPORT=str(report))
    cmd = [sys.executable, "-m", "ragtap", "serve", "--upstream", upstream.url + "/v1", "--port", str(port)]
    return Service(f"ragtap-{source.name}", cmd, port, "/healthz", env=env, ready_timeout=180, cwd=source)


def probe(service: Service, report: Path) -> dict[str, float]:
    """The probe's totals now (collections, objects freed, CPU seconds in collections) and the main thread's ticks."""
    report.unlink(missing_ok=True)
    os.kill(service.pid, signal.SIGUSR2)
    deadline = time.monotonic() + 5
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    totals = json.loads(report.read_text())
    totals["loop_ticks"] = _ticks(f"/proc/{service.pid}/task/{service.pid}/stat")
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conns", type=int, default=32)
    parser.add_argument("--bodies", default="rag,chat", help="comma-separated, of: rag, chat, rag-stream")
    args = parser.parse_args()
    sources = {"baseline": args.baseline_src.resolve(), "this": BENCH.parent}
    os.sched_setaffinity(0, {LOAD_CPU})
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-gc-"))
    made = {"rag": bodies.rag_body(numbered=True), "chat": bodies.chat_body(numbered=True),
            "rag-stream": bodies.rag_body(stream=True, numbered=True, max_tokens=20)}
    luas = {name: write_lua(workdir, name, made[name]) for name in args.bodies.split(",")}
    upstream_port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)], upstream_port, "/v1/models", cpu=LOAD_CPU)
    upstream.start(workdir)
    report = workdir / "gc.json"
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for round_ in range(args.rounds):
            for body, lua in luas.items():
                for name, source in sources.items():
                    service = ragtap(source, upstream, report).start(workdir)
                    try:
                        url = service.url + "/v1/chat/completions"
                        wrk(url, lua, args.conns, 2.0)  # warm-up: pooled connections, caches, label children
                        before = probe(service, report)
                        result = wrk(url, lua, args.conns, args.seconds)
                        after = probe(service, report)
                    finally:
                        service.stop()
                    n = result["requests"]
                    loop_s = (after["loop_ticks"] - before["loop_ticks"]) / CLK_TCK
                    gc_s = after["seconds"] - before["seconds"]
                    row = {"rps": result["rps"], "loop_us": loop_s * 1e6 / n, "gc_us": gc_s * 1e6 / n,
                           "per_1000": (after["collections"] - before["collections"]) * 1000 / n,
                           "freed": (after["collected"] - before["collected"]) / n, "share": gc_s / loop_s if loop_s else 0.0}
                    rows.setdefault((name, body), []).append(row)
                    log(f"round {round_ + 1} {name} {body}: {row['rps']:.0f}/s, loop {row['loop_us']:.0f} us/request, "
                        f"collections {row['per_1000']:.1f}/1000 requests freeing {row['freed']:.1f} objects/request, "
                        f"{row['gc_us']:.1f} us/request ({100 * row['share']:.1f}% of the loop)")
    finally:
        upstream.stop()
    print(f"c={args.conns}, {args.rounds} rounds of {args.seconds:g} s; baseline = {sources['baseline']}")
    print(f"{'checkout':<10}{'body':<12}{'req/s':>8}{'loop us/req':>13}{'collections/1000':>18}{'freed/req':>11}{'gc us/req':>11}{'gc share':>10}")
    for (name, body), values in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = {k: statistics.median(v[k] for v in values) for k in values[0]}
        print(f"{name:<10}{body:<12}{med['rps']:>8.0f}{med['loop_us']:>13.0f}{med['per_1000']:>18.1f}{med['freed']:>11.1f}"
              f"{med['gc_us']:>11.1f}{100 * med['share']:>9.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
