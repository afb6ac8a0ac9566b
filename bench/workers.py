"""`ragtap serve --workers 1` against `--workers N`: requests per second through ragtap, in one run.

    .venv/bin/python bench/workers.py [--workers N] [--conns 32] [--seconds 6] [--repeats 3]
        [--load-cpus 0] [--proxy-cpus 1,2,...] [--json PATH]

The scripted upstream (bench/upstream.py) and wrk run on `--load-cpus`; ragtap runs on `--proxy-cpus` (taskset),
first with one worker, then with N (default: one per proxy core), alternating within each repeat.  Each wrk run
through ragtap is paired with a direct run of the same scenario seconds before it, so the ratio to direct is
immune to load that drifts; the N/1 ratio is taken within each repeat, then the median.  Scenarios: the 1.5 KB
LangChain RAG request (recognised, injected, scored) and a plain chat of the same size, at concurrency `--conns`,
scoring on (the default config).  CPU per request: every process of ragtap (supervisor and workers, all threads).

On a machine with 3+ cores the default is load on core 0 and ragtap on all the others.  On 2 cores there is no
core left for ragtap alone: the default is then everything unpinned, which understates what workers give (the
upstream and wrk take their share of both cores); re-run on a bigger quiet machine for the real scaling figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from run import Plan, Service, free_port, log, measure_wrk, wrk, write_lua  # noqa: E402


def cpus(text: str) -> str:
    return ",".join(str(int(c)) for c in text.split(","))


def ragtap(workers: int, upstream: Service, where: str) -> Service:
    port = free_port()
    cmd = [sys.executable, "-m", "ragtap", "serve", "--upstream", upstream.url + "/v1", "--port", str(port), "--workers", str(workers)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    return Service(f"ragtap-{workers}w", cmd, port, "/healthz", cpu=where, env=env, ready_timeout=180)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cores = os.cpu_count() or 1
    spare = cores >= 3
    parser.add_argument("--load-cpus", type=cpus, default="0" if spare else ",".join(map(str, range(cores))))
    parser.add_argument("--proxy-cpus", type=cpus, default=",".join(map(str, range(1 if spare else 0, cores))))
    parser.add_argument("--workers", type=int, help="N (default: one per proxy core, at least 2)")
    parser.add_argument("--conns", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    many = args.workers or max(2, len(args.proxy_cpus.split(",")))
    plan = Plan(seconds=args.seconds, warmup=2.0, repeats=args.repeats, streams={}, stream_budget=0.0, quick=False)
    os.sched_setaffinity(0, {int(c) for c in args.load_cpus.split(",")})
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-workers-"))
    luas = {"rag": write_lua(workdir, "rag", bodies.rag_body(numbered=True)), "chat": write_lua(workdir, "chat", bodies.chat_body(numbered=True))}
    upstream_port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)], upstream_port, "/v1/models",
                       cpu=args.load_cpus)  # type: ignore[arg-type]
    load = [os.getloadavg()[0]]
    runs: list[dict[str, Any]] = []
    upstream.start(workdir)
    try:
        for repeat in range(args.repeats):
            run: dict[str, Any] = {}
            for workers in (1, many):
                service = ragtap(workers, upstream, args.proxy_cpus).start(workdir)
                try:
                    chat_url = service.url + "/v1/chat/completions"
                    wrk(chat_url, luas["rag"], args.conns, plan.warmup)  # connections open, caches warm
                    for body in ("rag", "chat"):
                        direct = measure_wrk(None, upstream.url + "/v1/chat/completions", luas[body], args.conns, plan)
                        through = measure_wrk(service, chat_url, luas[body], args.conns, plan)
                        run[f"{body}_{workers}w"] = {"direct_rps": direct["rps"], "rps": through["rps"], "ratio": through["rps"] / direct["rps"],
                                                      "p50_ms": through["p50_us"] / 1e3, "cpu_us_per_req": through.get("cpu_us_per_req")}
                        log(f"repeat {repeat + 1}: {body} {workers} worker(s): {through['rps']:.0f} req/s ({through['rps'] / direct['rps']:.3f} of direct)")
                finally:
                    service.stop()
            runs.append(run)
    finally:
        upstream.stop()
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {"workers": many, "conns": args.conns, "load_cpus": args.load_cpus, "proxy_cpus": args.proxy_cpus, "load_average": load}
    for body in ("rag", "chat"):
        for workers in (1, many):
            key = f"{body}_{workers}w"
            summary[key] = {field: statistics.median(r[key][field] for r in runs) for field in ("rps", "direct_rps", "ratio", "p50_ms", "cpu_us_per_req")}
        summary[f"{body}_scaling"] = statistics.median(r[f"{body}_{many}w"]["rps"] / r[f"{body}_1w"]["rps"] for r in runs)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    print(f"ragtap on cpus {args.proxy_cpus}, load (upstream, wrk) on cpus {args.load_cpus}; c={args.conns}, {args.repeats} repeats, "
          f"load average {load[0]:.1f} -> {load[1]:.1f}")
    print(f"{'scenario':<10}{'workers':>8}{'req/s':>9}{'of direct':>11}{'p50 ms':>8}{'cpu us/req':>12}")
    for body in ("rag", "chat"):
        for workers in (1, many):
            s = summary[f"{body}_{workers}w"]
            print(f"{body:<10}{workers:>8}{s['rps']:>9.0f}{s['ratio']:>11.3f}{s['p50_ms']:>8.2f}{s['cpu_us_per_req'] or float('nan'):>12.0f}")
        print(f"{body}: {many} workers / 1 worker = {summary[f'{body}_scaling']:.2f}x requests/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
