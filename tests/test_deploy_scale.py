"""The `scale` profile of docker-compose.yml (N proxies, M workers, Redis, Prometheus, Grafana).

There is no Docker here: the compose file is loaded as YAML and checked for what the stack needs to work: every
service of the profile present and wired to the others, every mounted file present, ragtap's own config file
valid for ragtap and pointing at the Redis service, the worker command accepted by ragtap's CLI parser, and
Prometheus discovering the proxy and worker replicas (promtool validates the file where it is installed).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ragtap.config import load_config

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SCALE = {name for name, service in SERVICES.items() if "scale" in service.get("profiles", [])}


def _interpolated_default(value: str) -> str:
    """`${NAME:-default}` -> default (what compose substitutes when NAME is unset)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))


def test_the_profile_has_proxies_workers_redis_and_a_balancer() -> None:
    assert SCALE == {"redis", "ragtap-proxy", "ragtap-worker", "ragtap-lb"}
    # Prometheus and Grafana are shared with the default stack (no profile: they always start).
    assert "profiles" not in SERVICES["prometheus"] and "profiles" not in SERVICES["grafana"]
    assert int(_interpolated_default(SERVICES["ragtap-proxy"]["deploy"]["replicas"])) == 2
    assert int(_interpolated_default(SERVICES["ragtap-worker"]["deploy"]["replicas"])) == 2
    # The default stack is unchanged: `docker compose up` starts no scale service.
    assert {name for name, s in SERVICES.items() if "profiles" not in s} == {"ragtap", "prometheus", "grafana", "otel-collector"}


def test_mounted_files_exist() -> None:
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts {source}, which does not exist"


def test_proxies_and_workers_share_a_config_that_hands_off_to_the_redis_service() -> None:
    for name in ("ragtap-proxy", "ragtap-worker"):
        mount = next(v for v in SERVICES[name]["volumes"] if v.endswith(":/etc/ragtap/ragtap.toml:ro"))
        config = load_config(ROOT / mount.split(":")[0], environ={})
        assert config.scoring.queue == "redis://redis:6379/0"
        assert "redis" in SERVICES[name]["depends_on"]
    assert SERVICES["redis"]["command"][0] == "redis-server" and "noeviction" in SERVICES["redis"]["command"]


def test_the_worker_command_is_accepted_by_ragtap() -> None:
    from ragtap.commands import worker

    parser = argparse.ArgumentParser()
    worker.add_parser(parser.add_subparsers())
    args = parser.parse_args(SERVICES["ragtap-worker"]["command"])
    assert args.metrics_port == 9464 and args.metrics_host == "0.0.0.0"


def test_prometheus_discovers_every_replica() -> None:
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    worker_port = SERVICES["ragtap-worker"]["command"][-1]
    assert jobs["ragtap-worker"]["dns_sd_configs"][0] == {"names": ["ragtap-worker"], "type": "A", "port": int(worker_port),
                                                          "refresh_interval": "30s"}
    assert jobs["ragtap-proxy"]["dns_sd_configs"][0]["names"] == ["ragtap-proxy"]
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (apt-get install -y prometheus): the YAML checks above still ran")
    result = subprocess.run([promtool, "check", "config", str(ROOT / "deploy/prometheus/prometheus.yml")], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_balancer_points_at_the_proxy_replicas() -> None:
    conf = (ROOT / "deploy/nginx-scale.conf").read_text()
    assert "server ragtap-proxy:8787;" in conf and "proxy_buffering off;" in conf
    assert SERVICES["ragtap-lb"]["ports"] == ["127.0.0.1:8788:8788"]
