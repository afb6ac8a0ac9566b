"""Instructions per request on ragtap's request path, counted by callgrind: the same on a busy or a quiet machine.

    .venv/bin/python bench/request_instructions.py [--baseline-src /path/to/other/checkout] [--peer] [--no-scoring]

`ragtap serve` (default config: scoring on, Prometheus and the capture store on) runs under
`valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`, from this checkout and then from
`--baseline-src` (PYTHONPATH), against the bench upstream (`upstream.py`).  After a warm-up (every scenario, so
that token tables, label children and caches exist), each scenario is counted on its own: instrumentation on,
`--requests` sequential requests on one keep-alive connection, wait until the process is idle (the scoring thread
has scored them all and the event loop has exported them), instrumentation off, dump.  Scenarios:

- rag: the 1.5 KB LangChain RAG request (bench/bodies.py), not streamed: recognised, injected, split, scored;
- rag-stream: the same streamed (20 content chunks);
- chat: the plain chat of the same size, forwarded untouched (the non-RAG path).

With scoring on (the default config), every interaction is scored (requests come one at a time), so the event
loop's count includes the scored interaction's hooks and the hand-off to the embedding thread; at c=32 most
interactions are shed by the full queue instead, which `--no-scoring` approximates (the request path alone).
`--peer` also measures the bare aiohttp passthrough (bench/peer_passthrough.py) on the same requests.

Reported per request: instructions of the main thread (the event loop: the request path and the exporters' hooks,
`interaction_scored` included) and of the whole process (scoring's embedding thread included).  The counts of the
same checkout differ by well under 1% between runs; the numbers of questions carry each request's index, so every
question is a new text to embed, as in bench/run.py.  Takes ~2 minutes per checkout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from run import CLK_TCK, LOAD_CPU, Service, _ticks, free_port, log  # noqa: E402

SCENARIOS = {
    "rag": lambda: bodies.rag_body(numbered=True),
    "rag-stream": lambda: bodies.rag_body(stream=True, numbered=True, max_tokens=20),
    "chat": lambda: bodies.chat_body(numbered=True),
}


def send(port: int, body: bytes, first: int, count: int) -> None:
    """`count` sequential requests on one keep-alive connection; every reply must be a 200."""
    prefix, suffix = body.split(b"{n}")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for n in range(first, first + count):
            connection.request("POST", "/v1/chat/completions", prefix + str(n).encode() + suffix,
                               {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"})
            reply = connection.getresponse()
            data = reply.read()
            if reply.status != 200:
                raise RuntimeError(f"request {n}: {reply.status} {data[:200]!r}")
    finally:
        connection.close()


def send_concurrently(port: int, body: bytes, first: int, count: int, conns: int) -> None:
    """`count` requests over `conns` keep-alive connections at once (one thread each), like wrk's -c."""
    share = -(-count // conns)
    with ThreadPoolExecutor(conns) as pool:
        for done in [pool.submit(send, port, body, first + i * share, min(share, count - i * share)) for i in range(conns) if i * share < count]:
            done.result()


def process_ticks(pid: int) -> int:
    return sum(_ticks(f"/proc/{pid}/task/{tid}/stat") for tid in os.listdir(f"/proc/{pid}/task"))


def normal_priority(pid: int) -> None:
    """ragtap runs its embedding thread at nice 19: on a busy machine it would then get so little CPU that a
    scoring backlog looks like an idle process.  Instruction counts do not depend on the priority."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), 0)
        except OSError:
            pass


def scoring_queue(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("GET", "/healthz")
        return int(json.loads(connection.getresponse().read()).get("scoring_queue", 0))
    finally:
        connection.close()


def wait_idle(pid: int, port: int | None, timeout: float = 900.0) -> None:
    """Until the process used under 3% of a core for 1.5 s twice in a row (valgrind's own idle cost is below) and,
    for ragtap (`port`), its scoring queue is empty: everything sent was scored and exported."""
    deadline = time.monotonic() + timeout
    last, calm = process_ticks(pid), 0
    while time.monotonic() < deadline:
        time.sleep(1.5)
        normal_priority(pid)
        now = process_ticks(pid)
        calm = calm + 1 if (now - last) / CLK_TCK < 0.045 else 0
        last = now
        if calm >= 2:
            if port is None or scoring_queue(port) == 0:
                return
            calm, last = 0, process_ticks(pid)
    raise RuntimeError(f"pid {pid} still busy after {timeout:.0f} s")


def callgrind(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True, timeout=60)


def thread_totals(out_prefix: Path, part: int) -> dict[int, int]:
    """Instructions per thread (1 = the main thread) of one dump."""
    totals: dict[int, int] = {}
    for path in out_prefix.parent.glob(f"{out_prefix.name}.{part}-*"):
        thread = int(path.name.rsplit("-", 1)[1])
        for line in path.read_text(errors="replace").splitlines()[::-1]:
            if line.startswith("totals:"):
                totals[thread] = int(line.split()[1])
                break
    return totals


def measure(source: Path | None, upstream: Service, workdir: Path, scenarios: list[str], requests: int, warmup: int,
            scoring: bool = True, conns: int = 1) -> dict[str, tuple[float, float]]:
    """Per scenario: (main-thread instructions per request, whole-process instructions per request).  `source`:
    the checkout whose `ragtap serve` is measured; None: the bare aiohttp passthrough (peer_passthrough.py)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    name = source.name if source is not None else "aiohttp-passthrough"
    env["XDG_DATA_HOME"] = str(workdir / f"data-{name}-{port}")  # a fresh capture store and salt per run
    env["PYTHONHASHSEED"] = "0"  # the same dict and set layouts in every run
    out_prefix = workdir / f"callgrind-{name}-{port}"
    if source is not None:
        env["PYTHONPATH"] = str(source)
        target = ["-m", "ragtap", "serve", "--upstream", upstream.url + "/v1", "--port", str(port)]
        if not scoring:
            config = workdir / "no-scoring.toml"
            config.write_text("[scoring]\nenabled = false\n")
            target += ["--config", str(config)]
        ready = "/healthz"
    else:
        target = [str(BENCH / "peer_passthrough.py"), "--upstream", upstream.url, "--port", str(port)]
        ready = "/v1/models"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", f"--callgrind-out-file={out_prefix}",
           sys.executable, *target]
    service = Service(f"callgrind-{name}", cmd, port, ready, env=env, ready_timeout=600, cwd=source or BENCH.parent).start(workdir)
    results: dict[str, tuple[float, float]] = {}
    try:
        valgrind_pid = service.pid
        for scenario in scenarios:
            send(port, SCENARIOS[scenario](), 1, warmup)
        scored = port if source is not None else None
        wait_idle(valgrind_pid, scored)
        for part, scenario in enumerate(scenarios, start=1):
            callgrind(valgrind_pid, "--zero")
            callgrind(valgrind_pid, "--instr=on")
            send_concurrently(port, SCENARIOS[scenario](), 10_000 * part, requests, conns)
            wait_idle(valgrind_pid, scored)
            callgrind(valgrind_pid, "--instr=off")
            callgrind(valgrind_pid, f"--dump={scenario}")
            totals = thread_totals(out_prefix, part)
            results[scenario] = (totals.get(1, 0) / requests, sum(totals.values()) / requests)
            log(f"{name}: {scenario}: {results[scenario][0]:,.0f} instructions per request on the event loop, "
                f"{results[scenario][1]:,.0f} in all")
    finally:
        service.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, help="another checkout, measured after this one in the same run")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--scenarios", default="rag,rag-stream,chat")
    parser.add_argument("--peer", action="store_true", help="also the bare aiohttp passthrough (bench/peer_passthrough.py)")
    parser.add_argument("--conns", type=int, default=1, help="connections sending at once (1: one request at a time, the most "
                        "repeatable count; 32: the event loop's work at c=32, within a few percent from run to run)")
    parser.add_argument("--no-scoring", action="store_true",
                        help="[scoring] enabled = false: the request path alone (what a RAG request costs at c=32, where most "
                             "interactions are shed by the full queue)")
    args = parser.parse_args()
    scenarios = args.scenarios.split(",")
    sources: dict[str, Path | None] = {"this": BENCH.parent}
    if args.baseline_src is not None:
        sources["baseline"] = args.baseline_src.resolve()
    if args.peer:
        sources["aiohttp"] = None
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-instr-"))
    upstream_port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)], upstream_port, "/v1/models", cpu=LOAD_CPU)
    upstream.start(workdir)
    table: dict[str, dict[str, tuple[float, float]]] = {}
    try:
        for label, source in sources.items():
            table[label] = measure(source, upstream, workdir, scenarios, args.requests, args.warmup, scoring=not args.no_scoring, conns=args.conns)
    finally:
        upstream.stop()
    print(f"{args.requests} requests per scenario over {args.conns} connection(s) after {args.warmup} warm-up, "
          f"scoring {'off' if args.no_scoring else 'on'}; "
          "instructions per request (callgrind)")
    print(f"{'checkout':<10}{'scenario':<12}{'event loop':>14}{'whole process':>16}")
    for label, rows in table.items():
        for name, (loop, whole) in rows.items():
            print(f"{label:<10}{name:<12}{loop:>14,.0f}{whole:>16,.0f}")
    for other in ("baseline", "aiohttp"):
        for scenario in scenarios if other in table else ():
            base, this = table[other][scenario], table["this"][scenario]
            print(f"{scenario}: this checkout's event loop {this[0] / base[0]:.3f}x of {other}'s ({this[0] - base[0]:+,.0f}), "
                  f"whole process {this[1] / base[1]:.3f}x ({this[1] - base[1]:+,.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
