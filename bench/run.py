"""ragtap's latency, throughput, stream and scoring benchmark, against a direct call and peer proxies, in one run.

    .venv/bin/python bench/run.py            # full: 3 repeats, ~8-10 min
    .venv/bin/python bench/run.py --quick    # 1 repeat, shorter runs, ~2-3 min
    .venv/bin/python bench/run.py --with-litellm   # also LiteLLM's proxy (installed into a temp venv)

Layout (2 cores): the scripted upstream (bench/upstream.py), wrk and the stream client run on core 0; the
proxy under test runs alone on core 1 (`taskset -c 1`).  Targets, each measured in the same run:
- direct: the upstream itself, no proxy;
- ragtap: `ragtap serve` with the default config (scoring on: MiniLM embedder in a thread, Prometheus on);
- ragtap-noscore: the same with `[scoring] enabled = false` (what scoring costs the request path);
- aiohttp-passthrough: bench/peer_passthrough.py, the floor for an aiohttp proxy;
- nginx: `proxy_pass` to a keep-alive upstream block, 1 worker (when nginx is installed);
- litellm: LiteLLM's proxy, 1 worker (only with --with-litellm).
Workloads: a 1.5 KB LangChain `rlm/rag-prompt` request (ragtap recognises and injects it) and a plain chat of
the same size (ragtap forwards its bytes untouched); wrk at concurrency 1 (latency) and 32 (throughput);
streams at concurrency 1 with 20, 200 and 2,000 chunks (an aiohttp client).  Each scenario is measured direct,
then through the target, seconds apart (paired, so load that drifts during the run does not skew the ratio).
Every figure is the median of the repeats, and every ratio is computed within a repeat, then the median taken.  CPU per request is read from
/proc/PID/stat (utime+stime of the proxy's processes) over each wrk run; for ragtap also the main thread's
alone (the event loop: the request path without the scoring thread).  Scoring figures come from
bench/scoring.py (the ScoringQueue driven directly, on core 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bodies

LOAD_CPU, PROXY_CPU = 0, 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
LITELLM_VENV = Path(tempfile.gettempdir()) / "ragtap-bench-litellm"
# Sent as the API key to every target; LiteLLM refuses to start without a (strong) master key, so it is this one.
BENCH_KEY = "sk-bench-" + "0123456789abcdef" * 3
CHUNK_SIZES = (20, 200, 2000)
# An SSE chunk that carries answer text: `"content":"x` (orjson) or `"content": "x` (Python's json).
ANSWER_TOKEN = re.compile(rb'"content": ?"[^"]')


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------------------------------ processes
def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


def _ticks(stat_path: str) -> int:
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    except (OSError, IndexError):
        return 0


@dataclass
class Service:
    name: str
    cmd: list[str]
    port: int
    ready_path: str
    cpu: int = PROXY_CPU
    env: dict[str, str] | None = None
    ready_timeout: float = 60.0
    # The working directory: `python -m ragtap` imports ragtap from it first (sys.path[0]), before PYTHONPATH, so a
    # service measuring another checkout (`--baseline-src`) must start in that checkout.
    cwd: Path = ROOT
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, workdir: Path) -> Service:
        self.log_path = workdir / f"{self.name}.log"
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                ["taskset", "-c", str(self.cpu), *self.cmd], stdout=out, stderr=subprocess.STDOUT,
                env=self.env, cwd=self.cwd, start_new_session=True,
            )
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log_path}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=2) as reply:
                    if reply.status < 500:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} not ready after {self.ready_timeout:.0f} s; see {self.log_path}:\n{self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:] if self.log_path else ""
        except OSError:
            return ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_ticks(self) -> int:
        return sum(_ticks(f"/proc/{p}/stat") for p in process_tree(self.pid))

    def main_thread_ticks(self) -> int:
        return _ticks(f"/proc/{self.pid}/task/{self.pid}/stat")

    def rss_mb(self) -> float:
        total = 0
        for p in process_tree(self.pid):
            try:
                with open(f"/proc/{p}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # our own process group (start_new_session)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=5)


# ------------------------------------------------------------------------------------------------ load: wrk
LUA_TEMPLATE = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
-- Each request carries a new number in its question, so ragtap's scoring embeds a new question every time
-- (the documents and the upstream's reply repeat, as retrieved chunks do, and hit the embedding cache).
local prefix = [==[%s]==]
local suffix = [==[%s]==]
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, prefix .. n .. suffix)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%%d,"duration_us":%%d,"p50_us":%%d,"p99_us":%%d,"mean_us":%%.1f,"status_errors":%%d,"socket_errors":%%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def write_lua(workdir: Path, name: str, body: bytes) -> Path:
    """A wrk script posting `body`, whose one `{n}` is replaced by a per-request counter."""
    prefix, suffix = body.decode().split("{n}")
    assert "]==]" not in prefix + suffix
    path = workdir / f"{name}.lua"
    path.write_text(LUA_TEMPLATE % (BENCH_KEY, prefix, suffix))
    return path


def wrk(url: str, lua: Path, conns: int, seconds: float) -> dict[str, float]:
    cmd = ["taskset", "-c", str(LOAD_CPU), "wrk", "-t1", f"-c{conns}", f"-d{max(1, round(seconds))}s", "--timeout", "10s", "-s", str(lua), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("WRKJSON "):
            result = json.loads(line[len("WRKJSON "):])
            result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
            if result["requests"] < 5:  # too few for percentiles (LiteLLM at c=1 in a 2 s run)
                result["p50_us"] = result["p99_us"] = float("nan")
            return result
    raise RuntimeError(f"wrk printed no result: {out.stdout[-500:]} {out.stderr[-500:]}")


# ------------------------------------------------------------------------------------------------ load: streams
async def _streams(url: str, body: bytes, count: int, budget_s: float) -> list[tuple[float, float, int]]:
    """Sequential streamed requests; per request (time to first answer text, time to the end, bytes)."""
    import aiohttp

    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {BENCH_KEY}"}
    results: list[tuple[float, float, int]] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1), auto_decompress=False) as session:
        deadline = time.perf_counter() + budget_s
        warm = 5  # the first requests open the connection and warm the path; they are not kept
        for i in range(count + warm):
            start = time.perf_counter()
            first = None
            size = 0
            tail = b""
            async with session.post(url, data=body, headers=headers) as reply:
                if reply.status != 200:
                    raise RuntimeError(f"stream request to {url} failed: {reply.status} {(await reply.read())[:300]!r}")
                async for data in reply.content.iter_any():
                    if first is None:
                        if ANSWER_TOKEN.search(tail + data):
                            first = time.perf_counter()
                        tail = data[-32:]
                    size += len(data)
            end = time.perf_counter()
            if i >= warm:
                results.append(((first or end) - start, end - start, size))
                if len(results) >= 5 and time.perf_counter() > deadline:
                    break
    return results


def run_async(coro: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:
        return asyncio.run(coro)


def median(values: list[float]) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


# ------------------------------------------------------------------------------------------------ targets
def ragtap_service(name: str, upstream: Service, workdir: Path, scoring: bool) -> Service:
    port = free_port()
    cmd = [sys.executable, "-m", "ragtap", "serve", "--upstream", upstream.url + "/v1", "--port", str(port)]
    if not scoring:
        config = workdir / "noscore.toml"
        config.write_text("[scoring]\nenabled = false\n")
        cmd[4:4] = ["--config", str(config)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))}
    # the default capture store (on since issue 24) in the run's own folder, never the real home
    env["XDG_DATA_HOME"] = str(workdir / f"data-{name}")
    return Service(name, cmd, port, "/healthz", env=env, ready_timeout=120)


def nginx_service(upstream: Service, workdir: Path) -> Service | None:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        return None
    port = free_port()
    ngx = workdir / "nginx"
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (ngx / sub).mkdir(parents=True, exist_ok=True)
    conf = ngx / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
daemon off;
master_process on;
pid {ngx}/nginx.pid;
error_log {ngx}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {ngx}/client_body;
    proxy_temp_path {ngx}/proxy;
    fastcgi_temp_path {ngx}/fastcgi;
    uwsgi_temp_path {ngx}/uwsgi;
    scgi_temp_path {ngx}/scgi;
    upstream llm {{
        server 127.0.0.1:{upstream.port};
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        client_max_body_size 8m;
        location / {{
            proxy_pass http://llm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;        # an LLM gateway must pass streams through as they arrive
        }}
    }}
}}
""")
    return Service("nginx", [binary, "-p", str(ngx), "-c", str(conf), "-e", str(ngx / "error.log")], port, "/v1/models")


def install_litellm(timeout_s: float) -> Path | None:
    """LiteLLM's proxy in its own venv (never in ragtap's dependencies); None when it cannot be installed."""
    binary = LITELLM_VENV / "bin" / "litellm"
    if binary.exists():
        return binary
    log(f"installing litellm[proxy] into {LITELLM_VENV} (up to {timeout_s:.0f} s)")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True, timeout=120)
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "-q", "litellm[proxy]"], check=True, timeout=timeout_s)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        log(f"litellm could not be installed ({type(error).__name__}): skipped")
        return None
    return binary if binary.exists() else None


def litellm_service(binary: Path, upstream: Service, workdir: Path) -> Service:
    port = free_port()
    config = workdir / "litellm.yaml"
    config.write_text(f"""model_list:
  - model_name: {bodies.MODEL}
    litellm_params:
      model: openai/{bodies.MODEL}
      api_base: {upstream.url}/v1
      api_key: {BENCH_KEY}
litellm_settings:
  drop_params: true
  telemetry: false
""")
    env = dict(os.environ, LITELLM_MASTER_KEY=BENCH_KEY, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR",
               LITELLM_TELEMETRY="False", NO_DOCS="True")
    cmd = [str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    return Service("litellm", cmd, port, "/health/liveliness", env=env, ready_timeout=180)


# ------------------------------------------------------------------------------------------------ measurement
@dataclass
class Plan:
    seconds: float  # per wrk run
    warmup: float
    repeats: int
    streams: dict[int, int]  # chunks -> requests (upper bound)
    stream_budget: float  # seconds per chunk size (lower bound 5 requests)
    quick: bool


def measure_wrk(service: Service | None, url: str, lua: Path, conns: int, plan: Plan, main_thread: bool = False) -> dict[str, float]:
    before = service.cpu_ticks() if service else 0
    before_main = service.main_thread_ticks() if service and main_thread else 0
    result = wrk(url, lua, conns, plan.seconds)
    if service is not None and result["requests"]:
        result["cpu_us_per_req"] = (service.cpu_ticks() - before) / CLK_TCK * 1e6 / result["requests"]
        if main_thread:
            result["loop_cpu_us_per_req"] = (service.main_thread_ticks() - before_main) / CLK_TCK * 1e6 / result["requests"]
    if result["status_errors"] or result["socket_errors"]:
        log(f"  warning: {result['status_errors']} non-2xx and {result['socket_errors']} socket errors")
    return result


def measure_streams(service: Service | None, url: str, plan: Plan, direct_url: str | None = None) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Streams through the target; with `direct_url`, each chunk count is first measured direct (paired)."""
    out: dict[str, dict[str, float]] = {}
    paired: dict[str, dict[str, float]] = {}
    for chunks, count in plan.streams.items():
        body = bodies.rag_body(stream=True, max_tokens=chunks)  # the bench upstream sends max_tokens chunks
        for where, target_url, into in ((None, direct_url, paired), (service, url, out)):
            if target_url is None:
                continue
            before = where.cpu_ticks() if where else 0
            rows = run_async(_streams(target_url, body, count, plan.stream_budget))
            entry = {
                "requests": len(rows),
                "ttft_ms": median([r[0] for r in rows]) * 1e3,
                "ttft_p99_ms": sorted(r[0] for r in rows)[min(len(rows) - 1, int(0.99 * len(rows)))] * 1e3,
                "total_ms": median([r[1] for r in rows]) * 1e3,
                "bytes": median([r[2] for r in rows]),
            }
            if where is not None:
                entry["cpu_us_per_req"] = (where.cpu_ticks() - before) / CLK_TCK * 1e6 / len(rows)
            into[str(chunks)] = entry
    return out, paired


def scrape(service: Service) -> dict[str, float]:
    """A few of ragtap's own Prometheus series (summed over labels)."""
    wanted = {
        "ragtap_scoring_duration_seconds_count": "scored",
        "ragtap_scoring_dropped_total": "dropped",
        "ragtap_scoring_queue_depth": "queue_depth",
        "ragtap_requests_total": "requests",
    }
    out = {v: 0.0 for v in wanted.values()}
    try:
        with urllib.request.urlopen(service.url + "/metrics", timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in wanted:
            out[wanted[name]] += float(line.rsplit(" ", 1)[1])
    return out


def check_reply(url: str, body: bytes, injected: bool) -> None:
    """One request through the target: a chat.completion whose content is the answer, not ragtap's JSON."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", "Authorization": f"Bearer {BENCH_KEY}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        data = json.loads(reply.read())
    content = data["choices"][0]["message"]["content"]
    if '"answer"' in content or "supporting_content" in content:
        raise RuntimeError(f"{url}: the app got the raw JSON reply: {content[:200]}")
    if injected and not content.startswith("Customers"):
        raise RuntimeError(f"{url}: unexpected content {content[:200]}")


def measure_target(
    name: str, service: Service | None, url: str, plan: Plan, luas: dict[str, Path], scenarios: list[str], streams: bool, direct_url: str
) -> dict[str, Any]:
    """Every scenario is measured direct first, then through the target: the pair runs seconds apart, so the
    ratio is not skewed by load that changes over the run (other processes on a shared machine)."""
    chat_url = url + "/v1/chat/completions"
    direct_chat_url = direct_url + "/v1/chat/completions"
    log(f"  {name}")
    result: dict[str, Any] = {"direct": {}}
    wrk(chat_url, luas["chat"], 32, plan.warmup)  # open the pooled connections, warm caches
    is_ragtap = name.startswith("ragtap")
    for scenario in scenarios:
        body_name, conns = scenario.split("_c")
        result["direct"][scenario] = measure_wrk(None, direct_chat_url, luas[body_name], int(conns), plan)
        if is_ragtap and body_name == "rag" and "ragtap_before" not in result:
            result["ragtap_before"] = scrape(service)  # type: ignore[arg-type]
        result[scenario] = measure_wrk(service, chat_url, luas[body_name], int(conns), plan, main_thread=is_ragtap)
    if is_ragtap and "ragtap_before" in result:
        result["ragtap_after"] = scrape(service)  # type: ignore[arg-type]
    if streams:
        result["stream"], result["direct_stream"] = measure_streams(service, chat_url, plan, direct_chat_url)
    if service is not None:
        result["rss_mb"] = service.rss_mb()
    return result


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "kernel": platform.release(), "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            info["cpu"] = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), None)
        with open("/proc/meminfo") as meminfo:
            total = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
            info["memory_gb"] = round(total / 1024 / 1024, 1)
    except OSError:
        pass
    import importlib.metadata as md

    for package in ("aiohttp", "uvloop", "orjson", "onnxruntime", "prometheus-client"):
        try:
            info[package] = md.version(package)
        except md.PackageNotFoundError:
            info[package] = None
    for tool, args in (("wrk", ["wrk", "-v"]), ("nginx", ["nginx", "-v"])):
        try:
            out = subprocess.run(args, capture_output=True, text=True, timeout=5, check=False)
            info[tool] = (out.stdout + out.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.TimeoutExpired):
            info[tool] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "ragtap"], capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
        info["git"] = commit + ("+dirty" if dirty else "")
    except OSError:
        pass
    return info


# ------------------------------------------------------------------------------------------------ report
def ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or b == 0 or math.isnan(a) or math.isnan(b):
        return float("nan")
    return a / b


def per_repeat(runs: list[dict[str, Any]], fn: Any) -> float:
    values = []
    for run in runs:
        try:
            values.append(fn(run))
        except (KeyError, TypeError, ZeroDivisionError):
            continue
    return median(values)


def summarise(runs: list[dict[str, Any]], scoring: dict[str, Any] | None) -> dict[str, Any]:
    """Medians over repeats; ratios computed within each repeat first."""
    def get(run: dict[str, Any], target: str, scenario: str, key: str) -> float:
        return run[target][scenario][key]

    targets = [t for t in ("aiohttp-passthrough", "nginx", "litellm", "ragtap-noscore", "ragtap") if any(t in r for r in runs)]
    rows = []
    for target in targets:
        for body in ("chat", "rag"):
            if not any(f"{body}_c1" in r.get(target, {}) for r in runs):
                continue
            row = {
                "target": target,
                "request": "RAG (injected)" if body == "rag" and target.startswith("ragtap") else ("non-RAG chat" if body == "chat" else "RAG body"),
                "p50_ms": per_repeat(runs, lambda r, target=target, body=body: get(r, target, f"{body}_c1", "p50_us") / 1e3),
                "added_p50_ms": per_repeat(runs, lambda r, target=target, body=body: (get(r, target, f"{body}_c1", "p50_us") - r[target]["direct"][f"{body}_c1"]["p50_us"]) / 1e3),
                "added_p99_ms": per_repeat(runs, lambda r, target=target, body=body: (get(r, target, f"{body}_c1", "p99_us") - r[target]["direct"][f"{body}_c1"]["p99_us"]) / 1e3),
                "rps_c32": per_repeat(runs, lambda r, target=target, body=body: get(r, target, f"{body}_c32", "rps")),
                "ratio_c32": per_repeat(runs, lambda r, target=target, body=body: ratio(get(r, target, f"{body}_c32", "rps"), r[target]["direct"][f"{body}_c32"]["rps"])),
                "cpu_us_per_req": per_repeat(runs, lambda r, target=target, body=body: get(r, target, f"{body}_c32", "cpu_us_per_req")),
                "loop_cpu_us_per_req": per_repeat(runs, lambda r, target=target, body=body: get(r, target, f"{body}_c32", "loop_cpu_us_per_req")),
                "rss_mb": per_repeat(runs, lambda r, target=target: r[target]["rss_mb"]),
            }
            rows.append(row)
    def all_direct(body: str, key: str) -> float:
        """The median over every direct measurement of the run (each target's paired ones)."""
        return median([r[t]["direct"][body][key] for r in runs for t in targets if body in r.get(t, {}).get("direct", {})])

    direct = {
        body: {
            "p50_ms": all_direct(f"{body}_c1", "p50_us") / 1e3,
            "p99_ms": all_direct(f"{body}_c1", "p99_us") / 1e3,
            "rps_c32": all_direct(f"{body}_c32", "rps"),
        }
        for body in ("chat", "rag")
    }
    stream_rows = []
    streamed = [t for t in targets if any("stream" in r.get(t, {}) for r in runs)]
    if streamed:
        row0: dict[str, Any] = {"target": "direct"}
        row0["ttft_ms"] = median([r[t]["direct_stream"]["20"]["ttft_ms"] for r in runs for t in streamed if t in r])
        for chunks in CHUNK_SIZES:
            row0[f"total_ms_{chunks}"] = median([r[t]["direct_stream"][str(chunks)]["total_ms"] for r in runs for t in streamed if t in r])
        stream_rows.append(row0)
    for target in streamed:
        row: dict[str, Any] = {"target": target}
        row["ttft_ms"] = per_repeat(runs, lambda r, target=target: r[target]["stream"]["20"]["ttft_ms"])
        row["added_ttft_ms"] = per_repeat(runs, lambda r, target=target: r[target]["stream"]["20"]["ttft_ms"] - r[target]["direct_stream"]["20"]["ttft_ms"])
        for chunks in CHUNK_SIZES:
            key = str(chunks)
            row[f"total_ms_{key}"] = per_repeat(runs, lambda r, target=target, key=key: r[target]["stream"][key]["total_ms"])
            if target != "direct":
                row[f"added_us_per_chunk_{key}"] = per_repeat(
                    runs, lambda r, target=target, key=key, chunks=chunks: (r[target]["stream"][key]["total_ms"] - r[target]["direct_stream"][key]["total_ms"]) * 1e3 / chunks)
                row[f"cpu_us_per_chunk_{key}"] = per_repeat(runs, lambda r, target=target, key=key, chunks=chunks: r[target]["stream"][key]["cpu_us_per_req"] / chunks)
        if target != "direct":
            # Marginal CPU per chunk: the slope between chunk counts; equal slopes mean a flat per-chunk cost.
            row["cpu_slope_20_200_us"] = per_repeat(runs, lambda r, target=target: (r[target]["stream"]["200"]["cpu_us_per_req"] - r[target]["stream"]["20"]["cpu_us_per_req"]) / 180)
            row["cpu_slope_200_2000_us"] = per_repeat(runs, lambda r, target=target: (r[target]["stream"]["2000"]["cpu_us_per_req"] - r[target]["stream"]["200"]["cpu_us_per_req"]) / 1800)
        stream_rows.append(row)
    overload = {}
    if any("ragtap" in r and "ragtap_after" in r["ragtap"] for r in runs):
        def scored(r: dict[str, Any]) -> float:
            return r["ragtap"]["ragtap_after"]["scored"] - r["ragtap"]["ragtap_before"]["scored"]

        def dropped(r: dict[str, Any]) -> float:
            return r["ragtap"]["ragtap_after"]["dropped"] - r["ragtap"]["ragtap_before"]["dropped"]

        def rag_requests(r: dict[str, Any]) -> float:
            return r["ragtap"]["rag_c1"]["requests"] + r["ragtap"]["rag_c32"]["requests"]

        def rag_seconds(r: dict[str, Any]) -> float:
            return (r["ragtap"]["rag_c1"]["duration_us"] + r["ragtap"]["rag_c32"]["duration_us"]) / 1e6

        overload = {
            "rag_requests": per_repeat(runs, rag_requests),
            "scored": per_repeat(runs, scored),
            "scored_per_s_under_load": per_repeat(runs, lambda r: scored(r) / rag_seconds(r)),
            "dropped": per_repeat(runs, dropped),
            "rps_c32_scoring_on_vs_off": per_repeat(runs, lambda r: ratio(r["ragtap"]["rag_c32"]["rps"], r["ragtap-noscore"]["rag_c32"]["rps"])),
            "p50_c1_scoring_on_minus_off_ms": per_repeat(runs, lambda r: (r["ragtap"]["rag_c1"]["p50_us"] - r["ragtap-noscore"]["rag_c1"]["p50_us"]) / 1e3),
            "p99_c1_scoring_on_minus_off_ms": per_repeat(runs, lambda r: (r["ragtap"]["rag_c1"]["p99_us"] - r["ragtap-noscore"]["rag_c1"]["p99_us"]) / 1e3),
        }
    return {"direct": direct, "rows": rows, "streams": stream_rows, "overload": overload, "scoring": scoring}


def fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == float("inf"):
        return "inf"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def targets_check(summary: dict[str, Any]) -> list[tuple[str, bool | None, str]]:
    rows = {(r["target"], r["request"]): r for r in summary["rows"]}
    checks: list[tuple[str, bool | None, str]] = []
    rag = rows.get(("ragtap", "RAG (injected)"))
    bare_rag = rows.get(("aiohttp-passthrough", "RAG body"))
    if rag:
        versus = f" (bare aiohttp passthrough: {fmt(bare_rag['added_p50_ms'])} ms)" if bare_rag else ""
        checks.append(("RAG non-stream, scoring on: added p50 <= 1.5 ms at c=1", rag["added_p50_ms"] <= 1.5, f"{fmt(rag['added_p50_ms'])} ms{versus}"))
        versus = f" (bare aiohttp passthrough: {fmt(bare_rag['ratio_c32'], 3)})" if bare_rag else ""
        # Issue 23's gates (the earlier 0.12 and 1.2x were issue 13's).
        checks.append(("RAG non-stream, scoring on: throughput at c=32 >= 0.20 of direct", rag["ratio_c32"] >= 0.20, f"{fmt(rag['ratio_c32'], 3)}{versus}"))
    chat = rows.get(("ragtap", "non-RAG chat"))
    bare = rows.get(("aiohttp-passthrough", "non-RAG chat"))
    if chat and bare:
        limit = 1.15 * bare["added_p50_ms"]
        checks.append(("non-RAG passthrough: added p50 <= 1.15x bare aiohttp passthrough's", chat["added_p50_ms"] <= limit,
                       f"{fmt(chat['added_p50_ms'], 3)} ms vs {fmt(bare['added_p50_ms'], 3)} ms ({fmt(ratio(chat['added_p50_ms'], bare['added_p50_ms']))}x)"))
    stream = next((s for s in summary["streams"] if s["target"] == "ragtap"), None)
    if stream:
        bare_stream = next((s for s in summary["streams"] if s["target"] == "aiohttp-passthrough"), None)
        versus = f" (bare aiohttp passthrough: +{fmt(bare_stream['added_ttft_ms'])} ms)" if bare_stream else ""
        checks.append(("stream: first answer token <= 2 ms after direct (p50)", stream["added_ttft_ms"] <= 2.0, f"+{fmt(stream['added_ttft_ms'])} ms{versus}"))
        slope_a, slope_b = stream["cpu_slope_20_200_us"], stream["cpu_slope_200_2000_us"]
        flat = ratio(slope_b, slope_a)
        checks.append(("stream: per-chunk cost flat from 20 to 2,000 chunks (CPU slope 200->2000 within 1.3x of 20->200)",
                       None if math.isnan(flat) else flat <= 1.3, f"{fmt(slope_a, 1)} vs {fmt(slope_b, 1)} us/chunk ({fmt(flat)}x)"))
    scoring = summary.get("scoring")
    if scoring:
        cold, cached = scoring["capacity_cold"]["scored_per_s"], scoring["capacity_cached"]["scored_per_s"]
        checks.append(("scoring: >= 25 scored/s cold cache", cold >= 25, f"{fmt(cold, 1)}/s"))
        checks.append(("scoring: >= 50 scored/s documents cached", cached >= 50, f"{fmt(cached, 1)}/s"))
        targets = {"cold": 25.0, "cached": 50.0}
        below = [r for r in scoring["at_rate"] if r["offered_per_s"] < targets[r["cache"]]]
        if below:
            worst = max(r["verdict_p95_ms"] for r in below)
            rates = ", ".join(f"{r['cache']} {r['offered_per_s']:g}/s" for r in below)
            checks.append((f"scoring: p95 time to verdict < 1 s below those rates ({rates})", worst < 1000, f"worst p95 {fmt(worst, 0)} ms"))
    return checks


def print_report(info: dict[str, Any], summary: dict[str, Any], plan: Plan, started: float, loads: tuple[float, float]) -> None:
    p = print
    p("\n## ragtap benchmark\n")
    p(f"machine: {info.get('cpu')}, {info.get('cores')} cores, {info.get('memory_gb')} GB, Linux {info.get('kernel')}; "
      f"Python {info.get('python')}, aiohttp {info.get('aiohttp')}, uvloop {info.get('uvloop')}, onnxruntime {info.get('onnxruntime')}; "
      f"{info.get('wrk')}; {info.get('nginx')}; ragtap {info.get('git')}")
    p(f"mode: {'quick' if plan.quick else 'full'}, {plan.repeats} repeat(s) of {plan.seconds:g} s wrk runs; "
      f"load average {loads[0]:.2f} at start, {loads[1]:.2f} at end; wall time {time.monotonic() - started:.0f} s\n")
    d = summary["direct"]
    p(f"direct (no proxy): p50 {fmt(d['rag']['p50_ms'], 3)} ms, p99 {fmt(d['rag']['p99_ms'], 3)} ms at c=1; "
      f"{fmt(d['rag']['rps_c32'], 0)} req/s at c=32 (RAG body); non-RAG chat body: p50 {fmt(d['chat']['p50_ms'], 3)} ms, "
      f"{fmt(d['chat']['rps_c32'], 0)} req/s\n")
    p("### Non-streaming (wrk; added = target - direct, same body, same repeat)\n")
    p("| target | request | added p50 ms (c=1) | added p99 ms (c=1) | req/s (c=32) | ratio to direct | CPU us/req | event-loop CPU us/req | RSS MB |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in summary["rows"]:
        p(f"| {r['target']} | {r['request']} | {fmt(r['added_p50_ms'], 3)} | {fmt(r['added_p99_ms'], 2)} | {fmt(r['rps_c32'], 0)} | "
          f"{fmt(r['ratio_c32'], 3)} | {fmt(r['cpu_us_per_req'], 0)} | {fmt(r['loop_cpu_us_per_req'], 0)} | {fmt(r['rss_mb'], 0)} |")
    p("\nCPU us/req: utime+stime of the proxy's processes over the c=32 run / requests (ragtap: scoring thread "
      "included); event-loop: ragtap's main thread only.\n")
    if summary["streams"]:
        p("### Streams (c=1, RAG request with stream=true; ragtap injects and rewrites every chunk)\n")
        p("| target | first answer token ms | added ms | total ms 20 / 200 / 2,000 chunks | added us/chunk 20 / 200 / 2,000 | CPU us/chunk 20 / 200 / 2,000 | CPU slope us/chunk 20->200 / 200->2,000 |")
        p("|---|---:|---:|---|---|---|---|")
        for s in summary["streams"]:
            totals = " / ".join(fmt(s[f"total_ms_{c}"], 2) for c in CHUNK_SIZES)
            added = " / ".join(fmt(s.get(f"added_us_per_chunk_{c}"), 1) for c in CHUNK_SIZES)
            cpu = " / ".join(fmt(s.get(f"cpu_us_per_chunk_{c}"), 1) for c in CHUNK_SIZES)
            slopes = f"{fmt(s.get('cpu_slope_20_200_us'), 1)} / {fmt(s.get('cpu_slope_200_2000_us'), 1)}" if s["target"] != "direct" else "-"
            p(f"| {s['target']} | {fmt(s['ttft_ms'], 3)} | {fmt(s.get('added_ttft_ms'), 3)} | {totals} | {added} | {cpu} | {slopes} |")
        p("")
    o = summary["overload"]
    if o:
        p("### Requests outrunning scoring (ragtap, during its RAG wrk runs)\n")
        p(f"RAG requests {fmt(o['rag_requests'], 0)}; scored {fmt(o['scored'], 0)} ({fmt(o['scored_per_s_under_load'], 1)}/s while the "
          f"proxy was saturated); dropped by the full queue {fmt(o['dropped'], 0)}.  Request path with scoring on vs off: "
          f"throughput at c=32 {fmt(o['rps_c32_scoring_on_vs_off'], 3)}x, p50 at c=1 {fmt(o['p50_c1_scoring_on_minus_off_ms'], 3):s} ms, "
          f"p99 at c=1 {fmt(o['p99_c1_scoring_on_minus_off_ms'], 2)} ms.\n")
    sc = summary.get("scoring")
    if sc:
        p(f"### Scoring (ScoringQueue alone on core 1: {sc['embedder']}, 1 intra-op thread, micro-batches of {sc['batch_max']}; "
          "3 short documents per interaction)\n")
        tokens = sc.get("tokens", {})
        if tokens:
            p("MiniLM tokens per text: " + ", ".join(f"{k} {v}" for k, v in tokens.items()) + " (3 documents).\n")
        p("| case | texts embedded per interaction | scored/s at capacity | scored per CPU-second | event-loop lag p99 ms (max) while scoring |")
        p("|---|---:|---:|---:|---:|")
        for key, label in (("capacity_cold", "cold cache"), ("capacity_cached", "documents cached")):
            c = sc[key]
            p(f"| {label} | {fmt(c.get('texts_per_interaction'), 1)} | {fmt(c['scored_per_s'], 1)} | {fmt(c.get('scored_per_cpu_s'), 1)} | "
              f"{fmt(c['loop_lag_p99_ms'], 2)} ({fmt(c['loop_lag_max_ms'], 1)}) |")
        p("\nscored per CPU-second: interactions / CPU time of the scoring process, i.e. the rate with a core of its own.")
        p("\nTime from submit to verdict at fixed arrival rates (\"inf\": some interactions had no verdict 10 s after the last "
          "arrival: the rate is above what scoring sustains here).\n")
        p("| cache | offered /s | scored /s | unfinished | verdict p50 ms | p95 ms | p99 ms |")
        p("|---|---:|---:|---:|---:|---:|---:|")
        for r in sc["at_rate"]:
            p(f"| {r['cache']} | {fmt(r['offered_per_s'], 1)} | {fmt(r['scored_per_s'], 1)} | {r.get('unfinished', 0)} | {fmt(r['verdict_p50_ms'], 0)} | "
              f"{fmt(r['verdict_p95_ms'], 0)} | {fmt(r['verdict_p99_ms'], 0)} |")
        p("")
    p("### Targets\n")
    for name, ok, detail in targets_check(summary):
        p(f"- {'MET' if ok else ('NOT MET' if ok is False else 'n/a')}: {name}: {detail}")
    p("")


# ------------------------------------------------------------------------------------------------ main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 2 s runs, short scoring (~2-3 min)")
    parser.add_argument("--repeats", type=int, help="repeats (default 3; 1 with --quick)")
    parser.add_argument("--seconds", type=int, help="seconds per wrk run (default 4; 2 with --quick)")
    parser.add_argument("--with-litellm", action="store_true", help="also benchmark LiteLLM's proxy (pip-installed into a temp venv)")
    parser.add_argument("--litellm-install-timeout", type=float, default=600)
    parser.add_argument("--no-nginx", action="store_true")
    parser.add_argument("--no-scoring", action="store_true", help="skip the scoring benchmark (bench/scoring.py)")
    parser.add_argument("--json", metavar="PATH", help="also write every raw measurement to PATH")
    args = parser.parse_args()

    if (os.cpu_count() or 1) < 2:
        print("bench/run.py needs 2 cores (load on core 0, proxy on core 1)", file=sys.stderr)
        return 2
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install -y wrk", file=sys.stderr)
        return 2
    plan = Plan(
        seconds=args.seconds or (2.0 if args.quick else 4.0),
        warmup=1.0,
        repeats=args.repeats or (1 if args.quick else 3),
        streams={20: 60, 200: 30, 2000: 8} if args.quick else {20: 200, 200: 100, 2000: 25},
        stream_budget=1.5 if args.quick else 4.0,
        quick=args.quick,
    )
    started = time.monotonic()
    load_start = os.getloadavg()[0]
    os.sched_setaffinity(0, {LOAD_CPU})  # this process is the stream client: it belongs with the load
    info = machine_info()
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-"))
    luas = {"rag": write_lua(workdir, "rag", bodies.rag_body(numbered=True)), "chat": write_lua(workdir, "chat", bodies.chat_body(numbered=True))}
    log(f"work dir {workdir}; plan {plan}")

    litellm_binary = install_litellm(args.litellm_install_timeout) if args.with_litellm else None
    upstream_port = free_port()
    upstream = Service("upstream", [sys.executable, str(BENCH / "upstream.py"), "--port", str(upstream_port)], upstream_port, "/v1/models", cpu=LOAD_CPU)
    services: list[Service] = []
    runs: list[dict[str, Any]] = []
    scoring: dict[str, Any] | None = None
    try:
        upstream.start(workdir)
        services.append(upstream)
        peers: list[Service] = [Service("aiohttp-passthrough", [sys.executable, str(BENCH / "peer_passthrough.py"), "--upstream", upstream.url, "--port", str(p := free_port())], p, "/v1/models")]
        if not args.no_nginx:
            nginx = nginx_service(upstream, workdir)
            if nginx is None:
                log("nginx not installed: skipped (apt-get install -y nginx)")
            else:
                peers.append(nginx)
        if litellm_binary is not None:
            peers.append(litellm_service(litellm_binary, upstream, workdir))
        noscore = ragtap_service("ragtap-noscore", upstream, workdir, scoring=False)
        for service in [*peers, noscore]:
            log(f"starting {service.name}")
            try:
                service.start(workdir)
                services.append(service)
            except RuntimeError as error:
                log(f"{service.name} did not start, skipped: {error}")
        peers = [s for s in peers if s in services]

        for repeat in range(plan.repeats):
            log(f"repeat {repeat + 1}/{plan.repeats}")
            # A fresh ragtap per repeat: the previous repeat's RAG runs leave a full scoring queue behind.
            ragtap = ragtap_service("ragtap", upstream, workdir, scoring=True)
            log("  starting ragtap (scoring on)")
            ragtap.start(workdir)
            services.append(ragtap)
            time.sleep(1.0)
            run: dict[str, Any] = {"load_average": os.getloadavg()[0]}
            direct = upstream.url
            for peer in peers:
                run[peer.name] = measure_target(peer.name, peer, peer.url, plan, luas, ["chat_c1", "rag_c1", "rag_c32"], True, direct)
            if noscore in services:
                run["ragtap-noscore"] = measure_target("ragtap-noscore", noscore, noscore.url, plan, luas, ["rag_c1", "rag_c32"], False, direct)
            check_reply(ragtap.url + "/v1/chat/completions", bodies.rag_body(), injected=True)
            # Non-RAG first, then streams, then the RAG runs that fill the scoring queue.
            ragtap_result = measure_target("ragtap", ragtap, ragtap.url, plan, luas, ["chat_c1", "chat_c32"], True, direct)
            rag_result = measure_target("ragtap", ragtap, ragtap.url, plan, luas, ["rag_c1", "rag_c32"], False, direct)
            ragtap_result["direct"].update(rag_result.pop("direct"))
            ragtap_result.update(rag_result)
            run["ragtap"] = ragtap_result
            ragtap.stop()
            services.remove(ragtap)
            runs.append(run)
    finally:
        for service in reversed(services):
            service.stop()

    if not args.no_scoring:
        log("scoring benchmark (bench/scoring.py on core 1)")
        cmd = ["taskset", "-c", str(PROXY_CPU), sys.executable, str(BENCH / "scoring.py"), "--json", *(["--quick"] if args.quick else [])]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, start_new_session=True, check=False)
        try:
            scoring = json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            log(f"scoring benchmark failed: {out.stderr[-1500:]}")

    summary = summarise(runs, scoring)
    print_report(info, summary, plan, started, (load_start, os.getloadavg()[0]))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "plan": plan.__dict__, "runs": runs, "scoring": scoring, "summary": summary}, indent=1, default=str))
        log(f"raw results in {args.json}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
