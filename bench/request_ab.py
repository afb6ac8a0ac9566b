"""The request path of two checkouts side by side: CPU per request and requests/s at c=32, alternating, one run.

    .venv/bin/python bench/request_ab.py --baseline-src /path/to/previous/checkout [--seconds 5] [--rounds 4] [--conns 32]

Layout as bench/run.py (2 cores): the bench upstream and wrk on core 0, `ragtap serve` (default config, scoring on)
alone on core 1, started from this checkout or from `--baseline-src` (PYTHONPATH) in turn, a fresh process per
round.  Scenarios: the 1.5 KB LangChain RAG request and the plain chat of the same size (bench/bodies.py), each
paired with a direct run seconds before.  Reported, median over rounds: requests/s and its ratio to direct, CPU per
request of the whole process and of its main thread (the event loop: the request path without the scoring
thread), from /proc.  CPU per request moves little with other load on the machine; requests/s moves a lot.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from run import LOAD_CPU, Plan, Service, free_port, log, measure_wrk, wrk, write_lua  # noqa: E402


def ragtap(source: Path, upstream: Service) -> Service:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    env["PYTHONPATH"] = str(source)
    cmd = [sys.executable, "-m", "ragtap", "serve", "--upstream", upstream.url + "/v1", "--port", str(port)]
    return Service(f"ragtap-{source.name}", cmd, port, "/healthz", env=env, ready_timeout=180, cwd=source)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--conns", type=int, default=32)
    args = parser.parse_args()
    sources = {"baseline": args.baseline_src.resolve(), "this": BENCH.parent}
    plan = Plan(seconds=args.seconds, warmup=2.0, repeats=args.rounds, streams={}, stream_budget=0.0, quick=False)
    os.sched_setaffinity(0, {LOAD_CPU})
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-ab-"))
    luas = {"rag": write_lua(workdir, "rag", bodies.rag_body(numbered=True)), "chat": write_lua(workdir, "chat", bodies.chat_body(numbered=True))}
    upstream_port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)], upstream_port, "/v1/models", cpu=LOAD_CPU)
    upstream.start(workdir)
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    load = [os.getloadavg()[0]]
    try:
        for round_ in range(args.rounds):
            for name, source in sources.items():
                service = ragtap(source, upstream).start(workdir)
                try:
                    url = service.url + "/v1/chat/completions"
                    wrk(url, luas["rag"], args.conns, plan.warmup)
                    for body in ("rag", "chat"):
                        direct = measure_wrk(None, upstream.url + "/v1/chat/completions", luas[body], args.conns, plan)
                        through = measure_wrk(service, url, luas[body], args.conns, plan, main_thread=True)
                        rows.setdefault((name, body), []).append({
                            "rps": through["rps"], "ratio": through["rps"] / direct["rps"],
                            "cpu": through["cpu_us_per_req"], "loop_cpu": through["loop_cpu_us_per_req"]})
                        log(f"round {round_ + 1} {name} {body}: {through['rps']:.0f}/s ({through['rps'] / direct['rps']:.3f} of direct), "
                            f"{through['cpu_us_per_req']:.0f} us CPU/request ({through['loop_cpu_us_per_req']:.0f} event loop)")
                finally:
                    service.stop()
    finally:
        upstream.stop()
    load.append(os.getloadavg()[0])
    print(f"c={args.conns}, {args.rounds} rounds of {args.seconds:g} s, load average {load[0]:.1f} -> {load[1]:.1f}; baseline = {sources['baseline']}")
    print(f"{'checkout':<10}{'body':<6}{'req/s':>8}{'of direct':>11}{'CPU us/req':>12}{'loop us/req':>13}")
    for (name, body), values in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = {k: statistics.median(v[k] for v in values) for k in ("rps", "ratio", "cpu", "loop_cpu")}
        print(f"{name:<10}{body:<6}{med['rps']:>8.0f}{med['ratio']:>11.3f}{med['cpu']:>12.0f}{med['loop_cpu']:>13.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
