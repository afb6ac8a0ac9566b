"""What the capture store costs: request-path latency with capture `all` against `none`, and store queries at 100k rows.

    .venv/bin/python bench/capture.py                      # both parts, ~3-5 minutes
    .venv/bin/python bench/capture.py --skip-queries       # only the request-path part
    .venv/bin/python bench/capture.py --json out.json      # also keep every figure

Part 1, the request path.  Two `ragtap serve` processes on the same core (taskset -c 1 when available), the same
config except `[store]`: one with `capture = "all"` into a SQLite file, one with `capture = "none"` (no store
built).  The scripted upstream (bench/upstream.py) and this client run on core 0.  Each round sends the same
number of RAG requests (the LangChain rlm/rag-prompt body, a new question each, so every one is embedded, scored
and, for `all`, written) to one then the other (the order alternates by round), waiting between runs until both
scoring queues are empty, so neither competes with the other's backlog.  The ratio all/none of the median and
p95 latency is taken per round, then the median over rounds.  At the end: rows in the store against requests
sent, and what was dropped (scoring queue, store queue).

Part 2, the store.  100,000 rows (realistic sizes: 3 documents of ~400 characters, 3 claims) into SQLite and, where
the PostgreSQL binaries are installed, a throwaway PostgreSQL server; then the queries the triage page makes,
after the planner's statistics are updated (as pruning / autovacuum do), each the median of 7 runs: the newest page, filtered pages, the 200th page by keyset cursor, free text
(a rare and a common word), counts, one row by id, and posting a label.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import bodies  # noqa: E402


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int, command: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") and (os.cpu_count() or 1) > cpu else command


def start(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    out = open(log_path, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status < 500:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def health(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
        return json.loads(reply.read())


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " "))


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------------------------------- 1: request path
async def run_requests(port: int, template: bytes, start_n: int, count: int, concurrency: int) -> list[float]:
    import aiohttp

    latencies: list[float] = []
    numbers = iter(range(start_n, start_n + count))
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}

    async def worker(session: aiohttp.ClientSession) -> None:
        for n in numbers:
            body = template.replace(b"{n}", str(n).encode())
            began = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as reply:
                await reply.read()
                assert reply.status == 200, reply.status
            latencies.append(time.perf_counter() - began)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return latencies


def wait_idle(ports: list[int], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(health(p).get("scoring_queue", 0) == 0 for p in ports):
            time.sleep(0.3)  # the batch in flight
            return
        time.sleep(0.1)
    raise TimeoutError("scoring queues did not drain")


def request_path(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    upstream_port = free_port()
    processes = [start(pinned(0, [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)]), workdir / "upstream.log")]
    ports = {"none": free_port(), "all": free_port()}
    store_path = workdir / "capture.sqlite3"
    try:
        wait_http(f"http://127.0.0.1:{upstream_port}/v1/models")
        for policy, port in ports.items():
            config = workdir / f"{policy}.toml"
            store = f'[store]\ncapture = "{policy}"\npath = "{store_path}"\n' if policy == "all" else '[store]\ncapture = "none"\n'
            config.write_text(f'[server]\nport = {port}\nupstream = "http://127.0.0.1:{upstream_port}/v1"\n{store}')
            command = [sys.executable, "-m", "ragtap", "serve", "--config", str(config)]
            processes.append(start(pinned(1, command), workdir / f"ragtap-{policy}.log"))
        for port in ports.values():
            wait_http(f"http://127.0.0.1:{port}/healthz")
        template = bodies.rag_body(numbered=True)
        n = 1
        # Warm-up: the embedder's first calls, the connection pools, SQLite's file.
        for port in ports.values():
            asyncio.run(run_requests(port, template, n, 20, 1))
            n += 20
        wait_idle(list(ports.values()))
        results: dict[int, list[dict[str, Any]]] = {}
        sent = {"none": 0, "all": 0}
        for concurrency in args.concurrency:
            rounds = []
            for r in range(args.rounds):
                order = ("none", "all") if r % 2 == 0 else ("all", "none")
                figures: dict[str, dict[str, float]] = {}
                for policy in order:
                    latencies = asyncio.run(run_requests(ports[policy], template, n, args.requests, concurrency))
                    n += args.requests
                    sent[policy] += args.requests
                    figures[policy] = {"p50_ms": statistics.median(latencies) * 1000, "p95_ms": quantile(latencies, 0.95) * 1000,
                                       "mean_ms": statistics.fmean(latencies) * 1000}
                    wait_idle(list(ports.values()))
                figures["ratio"] = {k: figures["all"][k] / figures["none"][k] for k in ("p50_ms", "p95_ms", "mean_ms")}
                rounds.append(figures)
                log(f"c={concurrency} round {r + 1}: none p50 {figures['none']['p50_ms']:.2f} ms, all p50 {figures['all']['p50_ms']:.2f} ms, "
                    f"ratio {figures['ratio']['p50_ms']:.3f}")
            results[concurrency] = rounds
        time.sleep(1.5)  # the store's writer flushes
        captured = sqlite3.connect(store_path).execute("SELECT count(*) FROM interactions").fetchone()[0]
        return {
            "rounds": results,
            "sent_all_measured": sent["all"],
            "rows_in_store": captured,  # includes the 20 warm-up requests
            "scoring_dropped_all": metric(ports["all"], "ragtap_scoring_dropped_total"),
            "store_dropped_all": metric(ports["all"], "ragtap_store_dropped_total"),
            "store_written_all": metric(ports["all"], "ragtap_store_written_total"),
        }
    finally:
        for process in processes:
            with_group = process.pid
            try:
                os.killpg(with_group, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------- 1b: the hook itself
def hook_cost(workdir: Path, calls: int = 5000) -> dict[str, float]:
    """What the event loop pays per captured interaction: the `interaction_scored` hook (policy, the typed row,
    the queue put), timed directly, while the writer thread writes the rows to SQLite (the GIL is shared)."""
    from ragtap.config import DEFAULT_THRESHOLDS
    from ragtap.exchange import ExchangeRecord
    from ragtap.exporters.store import StoreExporter
    from ragtap.store.factory import open_store
    from ragtap.store.settings import StoreSettings
    from ragtap.types import Assessment, Interaction, Verdict

    row = synthetic_rows(1)[0]
    exchange = ExchangeRecord(route="/v1/chat/completions", user="u", session="s", input_tokens=900, output_tokens=100,
                              supporting_tokens=40, trace_headers={"traceparent": f"00-{'a' * 32}-{'b' * 16}-01"})
    exchange.finished_at = exchange.started_at + 0.5
    interaction = Interaction(row.question, row.documents, row.answer, row.supporting, model="gpt-4o-mini", exchange=exchange)
    assessment = Assessment(row.scores, {}, Verdict.PARAMETRIC, True, row.explanation, claims=row.claims)
    figures = {}
    for policy in ("none", "all"):
        settings = StoreSettings(capture=policy if policy == "all" else "flagged", path=str(workdir / f"hook-{policy}.sqlite3"), queue_size=calls + 10)
        store = open_store(settings)
        exporter = StoreExporter(store, dataclasses.replace(settings, capture=policy), DEFAULT_THRESHOLDS)
        began = time.perf_counter()
        for _ in range(calls):
            exporter.interaction_scored(interaction, assessment, 0.01)
        figures[f"hook_us_{policy}"] = (time.perf_counter() - began) / calls * 1e6
        store.close_sync(60)
        figures[f"written_{policy}"] = store.stats.written
    return figures


# --------------------------------------------------------------------------------------------- 2: queries
WORDS = ("refund", "delivery", "warranty", "parcel", "invoice", "account", "password", "battery", "screen", "router",
         "printer", "subscription", "discount", "voucher", "return", "exchange", "tracking", "courier", "payment", "order")


def synthetic_rows(count: int, seed: int = 1) -> list[Any]:
    from ragtap.config import DEFAULT_THRESHOLDS
    from ragtap.store.base import CapturedInteraction
    from ragtap.types import ClaimOutcome, ClaimSupport, Document, Scores

    rng = random.Random(seed)
    now = time.time()
    verdicts = ("grounded", "parametric", "refusal", "unsupported_answer", "unscored")
    rows = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(60)]
        docs = tuple(Document(" ".join(rng.choice(WORDS) for _ in range(60)), f"doc-{i}-{d}") for d in range(3))
        answer = " ".join(words[:30]) + "."
        claims = tuple(ClaimSupport("answer", answer[k * 20:k * 20 + 20], k * 20, k * 20 + 20, ClaimOutcome.of_supported(rng.random() < 0.7), "lexical",
                                    rng.random(), 0, 0, 100, rng.random(), (), ()) for k in range(3))
        rare = " zeppelin" if i % 10_000 == 0 else ""
        rows.append(CapturedInteraction(
            id=f"{i:08d}", time=now - (count - i) * 2.0, question=" ".join(words[30:45]) + rare + "?", documents=docs,
            supporting=" ".join(words[45:]), answer=answer,
            scores=Scores(*(rng.random() for _ in range(6)), attributed_document=0), thresholds=DEFAULT_THRESHOLDS,
            verdict=rng.choices(verdicts, (60, 15, 10, 12, 3))[0], poor_retrieval=rng.random() < 0.2,
            explanation="SDRD 0.41 fail", claims=claims, latency_ms=rng.uniform(200, 3000), model=rng.choice(("gpt-4o", "gpt-4o-mini", "llama")),
            prompt_tokens=900, answer_tokens=60, supporting_tokens=40, trace_id=f"{i:032x}", span_id=f"{i:016x}",
            user=f"user-{rng.randrange(500)}", session=f"s-{rng.randrange(5000)}", rag_source="langchain"))
    return rows


async def timed(operation: Any, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        await operation()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


async def query_figures(settings: Any, rows: list[Any]) -> dict[str, float]:
    from ragtap.store.base import Label, StoreQuery
    from ragtap.store.factory import open_store

    store = open_store(settings)
    try:
        began = time.perf_counter()
        for k in range(0, len(rows), 1000):
            await store.add_many(rows[k:k + 1000])
        insert_s = time.perf_counter() - began
        # Steady state: the planner has statistics (SQLite: PRAGMA optimize, which the store's pruning runs;
        # PostgreSQL: ANALYZE, which autovacuum runs within a minute of a bulk load).
        await store.prune()
        if settings.url:
            import psycopg

            with psycopg.connect(settings.url, autocommit=True) as connection:
                connection.execute("ANALYZE interactions")
        # The 200th page: walk there once to get its cursor (keyset paging needs the previous page's last row).
        query = StoreQuery(limit=50)
        for _ in range(199):
            page = await store.query(query)
            query = dataclasses.replace(query, cursor=page.next_cursor)
        deep = query
        newest_id = rows[-1].id
        figures = {
            "insert_rows_per_s": len(rows) / insert_s,
            "newest_page_ms": await timed(lambda: store.query(StoreQuery(limit=50))),
            "verdict_page_ms": await timed(lambda: store.query(StoreQuery(verdicts=("parametric",), limit=50))),
            "rare_verdict_page_ms": await timed(lambda: store.query(StoreQuery(verdicts=("unscored",), limit=50))),
            "verdict_model_poor_page_ms": await timed(lambda: store.query(StoreQuery(verdicts=("parametric", "refusal"), model="llama", poor_retrieval=True, limit=50))),
            "user_page_ms": await timed(lambda: store.query(StoreQuery(user="user-7", limit=50))),
            "last_day_page_ms": await timed(lambda: store.query(StoreQuery(since=time.time() - 86400, limit=50))),
            "page_200_by_cursor_ms": await timed(lambda: store.query(deep)),
            "text_rare_word_ms": await timed(lambda: store.query(StoreQuery(text="zeppelin", limit=50))),
            "text_common_words_ms": await timed(lambda: store.query(StoreQuery(text="refund warranty", limit=50))),
            "count_all_ms": await timed(lambda: store.count()),
            "count_verdict_ms": await timed(lambda: store.count(StoreQuery(verdicts=("parametric",)))),
            "get_by_id_ms": await timed(lambda: store.get(newest_id)),
            "add_label_ms": await timed(lambda: store.add_label(Label(newest_id, verdict_right=True))),
        }
        return figures
    finally:
        await store.close()


def queries(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, float]]:
    from ragtap.store.settings import StoreSettings

    log(f"building {args.store_rows} synthetic rows")
    rows = synthetic_rows(args.store_rows)
    results: dict[str, dict[str, float]] = {}
    base = StoreSettings(capture="all", max_rows=10 * args.store_rows)
    log("SQLite: inserting and querying")
    results["sqlite"] = asyncio.run(query_figures(dataclasses.replace(base, path=str(workdir / "q.sqlite3")), rows))
    from pg_server import PostgresServer, unavailable

    reason = unavailable()
    if reason:
        log(f"PostgreSQL skipped: {reason}")
        return results
    server = PostgresServer()
    try:
        server.init()
        server.start()
        log("PostgreSQL: inserting and querying")
        results["postgresql"] = asyncio.run(query_figures(dataclasses.replace(base, url=server.url), rows))
    finally:
        server.remove()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="capture store benchmark")
    parser.add_argument("--requests", type=int, default=200, help="requests per target per round (default 200)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--store-rows", type=int, default=100_000)
    parser.add_argument("--skip-queries", action="store_true")
    parser.add_argument("--skip-requests", action="store_true")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-capture-"))
    report: dict[str, Any] = {"load_average_start": os.getloadavg()}
    try:
        if not args.skip_requests:
            report["hook"] = hook_cost(workdir)
            report["request_path"] = request_path(args, workdir)
        if not args.skip_queries:
            report["queries"] = queries(args, workdir)
    finally:
        report["load_average_end"] = os.getloadavg()
        shutil.rmtree(workdir, ignore_errors=True)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


def print_report(report: dict[str, Any]) -> None:
    print(f"load average {report['load_average_start'][0]:.2f} at start, {report['load_average_end'][0]:.2f} at end")
    path = report.get("request_path")
    if path:
        print("\nrequest path, capture all vs none (medians over rounds of the per-round figures):")
        print(f"  {'concurrency':<12} {'none p50':>9} {'all p50':>9} {'ratio p50':>10} {'none p95':>9} {'all p95':>9} {'ratio p95':>10}")
        for concurrency, rounds in path["rounds"].items():
            med = lambda policy, key: statistics.median(r[policy][key] for r in rounds)  # noqa: E731
            print(f"  {concurrency!s:<12} {med('none', 'p50_ms'):9.2f} {med('all', 'p50_ms'):9.2f} {med('ratio', 'p50_ms'):10.3f} "
                  f"{med('none', 'p95_ms'):9.2f} {med('all', 'p95_ms'):9.2f} {med('ratio', 'p95_ms'):10.3f}")
        print(f"  capture all: {path['sent_all_measured']} measured requests (+20 warm-up), {path['rows_in_store']} rows in the store, "
              f"store written {path['store_written_all']:.0f}, store dropped {path['store_dropped_all']:.0f}, "
              f"scoring dropped {path['scoring_dropped_all']:.0f}")
    hook = report.get("hook")
    if hook:
        print(f"\nthe interaction_scored hook on the event loop: {hook['hook_us_all']:.1f} us per interaction with capture all "
              f"({hook['written_all']:.0f} rows written by the thread meanwhile), {hook['hook_us_none']:.2f} us with capture none")
    for backend, figures in (report.get("queries") or {}).items():
        print(f"\n{backend}, {figures['insert_rows_per_s']:.0f} rows/s inserted in batches of 1000; queries (median of 7, ms):")
        for name, value in figures.items():
            if name != "insert_rows_per_s":
                print(f"  {name:<28} {value:8.2f}")


if __name__ == "__main__":
    main()
