"""End to end: a real Prometheus scrapes ragtap while RAG traffic flows through the proxy to a scripted upstream
that refuses, until the refusal alert of deploy/prometheus/rules.yml is pending or firing.

Needs the `prometheus` binary (Debian: `apt-get install prometheus`): skipped without it, except under CI.
The rules are the real rules.yml with the refusal alert's `for:` shortened; Prometheus scrapes and evaluates
every second, on a loopback port, with the scrape token ragtap is configured with.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from ragtap.config import load_config
from ragtap.embedding.base import l2_normalise
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply, was_injected

yaml = pytest.importorskip("yaml")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboard.json"
TOKEN = "scrape-secret"
MODEL = "gpt-test"
DEADLINE_S = 60.0

REFUSAL = "The documents do not contain information about bare metal servers in that region."


def prometheus_binary() -> str:
    path = shutil.which("prometheus")
    if path:
        return path
    if os.environ.get("CI"):
        pytest.fail("the prometheus binary is not installed but CI is set: apt-get install -y prometheus")
    pytest.skip("prometheus not installed (apt-get install -y prometheus)")


class WordHashEmbedder:
    """A deterministic bag-of-words embedder: enough for scores; the refusal verdict comes from the wording."""

    name = "test-word-hash"
    dim = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        return l2_normalise(out) if len(texts) else out


def refusing(body: dict) -> ScriptedReply:
    if was_injected(body):
        return ScriptedReply(json_reply(REFUSAL, "The retrieved document is about vCPU limits, not bare metal."))
    return ScriptedReply(REFUSAL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the Grafana dashboard, with its variables filled in."""
    import json

    found: list[str] = []

    def walk(panels: list[dict]) -> None:
        for panel in panels:
            found.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
            walk(panel.get("panels", []))

    walk(json.loads(DASHBOARD.read_text())["panels"])
    return [q.replace("$__rate_interval", "1m").replace("$model", ".*").replace("$metric", "sdrd") for q in found]


def write_prometheus_config(tmp: Path, ragtap_port: int) -> Path:
    rules = yaml.safe_load(RULES.read_text())
    found = False
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "RagtapRefusalRateHigh":
                rule["for"] = "2s"  # the production 10m, shortened for the test
                found = True
    assert found, "rules.yml lost RagtapRefusalRateHigh"
    (tmp / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
        "rule_files": [str(tmp / "rules.yml")],
        "scrape_configs": [{
            "job_name": "ragtap",
            "metrics_path": "/metrics",
            "authorization": {"type": "Bearer", "credentials": TOKEN},
            "static_configs": [{"targets": [f"127.0.0.1:{ragtap_port}"]}],
        }],
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


async def send_rag_traffic(base_url: str, stop: asyncio.Event, seen: dict) -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "In ibm service, what regions are bare metal servers for vpc available?"}],
        "ragtap": {"question": "In ibm service, what regions are bare metal servers for vpc available?",
                   "documents": ["vcpu-based instance limits are available in all commercial aws regions"]},
    }
    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            async with session.post(f"{base_url}/chat/completions", json=body) as resp:
                seen["status"] = resp.status
                payload = await resp.json()
                seen["answer"] = payload["choices"][0]["message"]["content"]
                seen["sent"] = seen.get("sent", 0) + 1
            await asyncio.sleep(0.1)


async def test_refusal_alert_fires_from_real_traffic(tmp_path: Path) -> None:
    binary = prometheus_binary()
    async with ScriptedUpstream(refusing) as upstream:
        config = load_config(flags={
            "server": {"upstream": upstream.base_url, "host": "127.0.0.1", "port": 0, "shutdown_grace_s": 2.0},
            "prometheus": {"token": TOKEN},
        }, environ={})
        async with RagtapServer(config, embedder=WordHashEmbedder()) as server:
            prom_port = free_port()
            prom_config = write_prometheus_config(tmp_path, server.port)
            log = (tmp_path / "prometheus.log").open("wb")
            proc = subprocess.Popen(
                [binary, f"--config.file={prom_config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                stdout=log, stderr=subprocess.STDOUT)
            stop = asyncio.Event()
            seen: dict = {}
            traffic = asyncio.create_task(send_rag_traffic(server.base_url, stop, seen))
            alert = None
            targets: object = None
            dashboard_errors: list = []
            try:
                api = f"http://127.0.0.1:{prom_port}/api/v1"
                deadline = time.monotonic() + DEADLINE_S
                async with aiohttp.ClientSession() as session:
                    while time.monotonic() < deadline and alert is None:
                        await asyncio.sleep(1.0)
                        assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-3000:]
                        assert not traffic.done() or traffic.exception() is None, traffic.exception()
                        try:
                            async with session.get(f"{api}/alerts") as resp:
                                alerts = (await resp.json())["data"]["alerts"]
                            async with session.get(f"{api}/targets") as resp:
                                targets = [(t["health"], t.get("lastError")) for t in
                                           (await resp.json())["data"]["activeTargets"]]
                        except (aiohttp.ClientError, KeyError, ValueError):
                            continue  # Prometheus still starting
                        for candidate in alerts:
                            if (candidate["labels"].get("alertname") == "RagtapRefusalRateHigh"
                                    and candidate["state"] in ("pending", "firing")):
                                alert = candidate
                    # the dashboard's queries run against the live data without errors
                    dashboard_errors = []
                    for query in dashboard_queries():
                        async with session.get(f"{api}/query", params={"query": query}) as resp:
                            result = await resp.json()
                        if result.get("status") != "success":
                            dashboard_errors.append((query, result.get("error")))
                        elif query.startswith("sum by (verdict)") and not result["data"]["result"]:
                            dashboard_errors.append((query, "no data"))
            finally:
                stop.set()
                await asyncio.gather(traffic, return_exceptions=True)
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
                log.close()

            assert seen.get("status") == 200 and seen.get("answer") == REFUSAL, seen  # the app got a plain answer
            assert alert is not None, (
                f"no refusal alert within {DEADLINE_S:.0f}s; targets={targets}; requests sent={seen.get('sent')}; "
                f"prometheus log tail:\n{(tmp_path / 'prometheus.log').read_text()[-2000:]}")
            assert alert["labels"]["model"] == MODEL
            assert alert["labels"]["severity"] == "warning"
            assert "refusals" in alert["annotations"]["summary"]
            assert targets and all(health == "up" for health, _ in targets), targets  # scraped with the token
            assert not dashboard_errors, dashboard_errors
