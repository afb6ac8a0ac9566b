"""The Prometheus rules in deploy/prometheus: promtool validates them and runs their unit tests.

Needs `promtool` (Debian: `apt-get install prometheus`).  Without it the promtool tests are skipped locally, but
fail when the CI environment variable is set, so CI cannot silently skip them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"
RULES_TEST = ROOT / "deploy" / "prometheus" / "rules_test.yml"


def promtool() -> str:
    path = shutil.which("promtool")
    if path:
        return path
    if os.environ.get("CI"):
        pytest.fail("promtool is not installed but CI is set: install it (apt-get install -y prometheus)")
    pytest.skip("promtool not installed (apt-get install -y prometheus); the rule tests need it")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([promtool(), *args], cwd=RULES.parent, capture_output=True, text=True, timeout=300)


def test_promtool_check_rules():
    result = run("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_promtool_test_rules():
    result = run("test", "rules", str(RULES_TEST))
    assert result.returncode == 0, result.stdout + result.stderr


def _alerts() -> list[dict]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_every_alert_is_documented_and_tested():
    alerts = _alerts()
    assert len(alerts) >= 12
    tests = RULES_TEST.read_text()
    header = RULES.read_text().split("groups:", 1)[0]
    for rule in alerts:
        name = rule["alert"]
        assert re.fullmatch(r"Ragtap[A-Z][A-Za-z]+", name), name
        assert rule.get("for"), f"{name}: needs a for: duration"
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        assert rule["annotations"].get("summary") and rule["annotations"].get("description"), name
        assert name in header, f"{name}: document its level in the header table of rules.yml"
        assert f'alertname="{name}",alertstate="firing"' in tests or f"alertname: {name}" in tests, \
            f"{name}: no test makes it fire"
