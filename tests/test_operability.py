"""Issue 13 #15 (remainder): what ragtap tells its operator.

- an upstream host that does not resolve at start: one WARNING line, ragtap still starts (DNS may come up later);
- a malformed `ragtap` field: counted (ragtap_malformed_ragtap_field_total{reason}) and logged at INFO, also when
  an implicit rule then recognises the request;
- `ragtap score` over lines without documents: a warning on stderr with the count;
- logging: a startup summary at INFO, one INFO line per request ragtap refused or failed with its reason code,
  per-request detail at DEBUG, JSON lines with RAGTAP_LOG_FORMAT=json.
Each failed on the previous code (nothing of this was logged or counted; `format` was an unknown key).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from conftest import ENV, RecordingUpstream, explicit, rag_messages, use_embedder
from ragtap.cli import main
from ragtap.commands.logs import JsonFormatter
from ragtap.config import ConfigError, load_config
from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.proxy.server import RagtapServer

ROOT = Path(__file__).resolve().parents[1]
QUICK = "[scoring]\nenabled = false\n[prometheus]\nenabled = false\n[server]\nconnect_timeout_s = 3.0\n"


def _serve(tmp_path: Path, upstream: str, env: dict[str, str], until: str = "does not resolve") -> tuple[list[str], int]:
    """Run `ragtap serve` until it has logged a line containing `until`, then SIGTERM; (stderr lines, exit code)."""
    config = tmp_path / "ragtap.toml"
    config.write_text(QUICK, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "ragtap", "serve", "--config", str(config), "--port", "0", "--upstream", upstream],
        cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
    )
    lines: list[str] = []
    watchdog = threading.Timer(60, process.kill)  # bounds the reads below: a killed process ends its stderr
    watchdog.start()
    try:
        assert process.stderr is not None
        while True:  # until the awaited line (the resolve check runs after the listening line, within connect_timeout_s)
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if until in line:
                break
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        lines += process.stderr.read().splitlines()  # (the same buffered reader: communicate() would skip its buffer)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return lines, process.returncode


def test_an_unresolvable_upstream_is_one_warning_line_and_ragtap_starts(tmp_path: Path) -> None:
    lines, code = _serve(tmp_path, "http://no-such-host.invalid/v1", {"RAGTAP_LOG_LEVEL": "INFO"})
    assert code == 0, lines
    assert any(line.startswith("ragtap listening on") for line in lines), lines
    warnings = [line for line in lines if "does not resolve" in line]
    assert len(warnings) == 1, lines
    assert "WARNING" in warnings[0] and "no-such-host.invalid" in warnings[0] and "502" in warnings[0]
    assert not any("Traceback" in line for line in lines)
    summary = [line for line in lines if "ragtap started:" in line]  # the startup summary, at INFO
    assert len(summary) == 1 and "upstream=http://no-such-host.invalid/v1" in summary[0] and "scoring=off" in summary[0], lines


def test_json_log_format(tmp_path: Path) -> None:
    lines, code = _serve(tmp_path, "http://no-such-host.invalid/v1", {"RAGTAP_LOG_LEVEL": "INFO", "RAGTAP_LOG_FORMAT": "json"})
    assert code == 0, lines
    logged = [line for line in lines if not line.startswith(("ragtap", "capture store:"))]  # (the status lines are plain text)
    entries = [json.loads(line) for line in logged]  # every log line is one JSON object
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(e["level"] == "INFO" and e["message"].startswith("ragtap started:") for e in entries)
    assert any(e["level"] == "WARNING" and "does not resolve" in e["message"] for e in entries)


def test_json_formatter_keeps_the_traceback_in_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("ragtap.x", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "failed here" and "ValueError: boom" in entry["exception"]


def test_a_bad_log_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="log.format: expected one of text, json"):
        load_config(environ={"RAGTAP_LOG_FORMAT": "xml"})


async def test_a_malformed_ragtap_field_is_counted_and_logged(embedder, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ragtap.requests")
    prometheus = PrometheusExporter()
    async with RecordingUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 1.0}})
        async with RagtapServer(config, embedder=embedder, exporters=[prometheus]) as server:
            url = f"http://127.0.0.1:{server.port}/v1/chat/completions"
            async with aiohttp.ClientSession() as session:
                bad = {"question": 1, "documents": ["d"]}  # the question is not a string
                for messages in (rag_messages(), [{"role": "user", "content": "hello"}]):
                    async with session.post(url, json={"model": "m", "messages": messages, "ragtap": bad}) as response:
                        assert response.status == 200
                async with session.post(url, json={"model": "m", "messages": rag_messages(), **explicit()}) as response:
                    assert response.status == 200  # a good field: not counted
        assert all("ragtap" not in r.body for r in upstream.requests)
    text = prometheus.render()[0].decode()
    assert 'ragtap_malformed_ragtap_field_total{reason="question_not_string"} 2.0' in text
    lines = [r.getMessage() for r in caplog.records if "malformed ragtap field" in r.getMessage()]
    assert len(lines) == 2 and all("reason=question_not_string" in line for line in lines)


async def test_refused_and_failed_requests_are_one_info_line_each_and_detail_is_debug(embedder, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ragtap.requests")
    async with RecordingUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 1.0,
                                                            "max_body_bytes": 1000}})
        async with RagtapServer(config, embedder=embedder, exporters=[]) as server:
            base = f"http://127.0.0.1:{server.port}"
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{base}/v1/chat/completions", data=b"x" * 5000, headers={"Content-Type": "application/json"}) as r:
                    assert r.status == 413
                async with session.get(URL(f"{base}/v1/../admin?api-key=secret-in-query", encoded=True)) as r:
                    assert r.status == 400
                async with session.post(f"{base}/v1/chat/completions", json={"model": "m", "messages": rag_messages(), **explicit()}) as r:
                    assert r.status == 200
        # the upstream is gone now: a new server pointed at its closed port
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 1.0}})
    async with RagtapServer(config, embedder=embedder, exporters=[]) as server:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"http://127.0.0.1:{server.port}/v1/chat/completions", json={"model": "m", "messages": rag_messages()}) as r:
                assert r.status == 502
    info = [r.getMessage() for r in caplog.records if r.name == "ragtap.requests" and r.levelno == logging.INFO]
    assert "request rejected: status=413 reason=request_too_large method=POST path=/v1/chat/completions" in info
    assert any(line.startswith("request rejected: status=400 reason=bad_path") for line in info)
    assert any(line.startswith("request failed: status=502 reason=upstream_unreachable") for line in info)
    assert len(info) == 3, info  # nothing for the request that went well
    debug = [r.getMessage() for r in caplog.records if r.name == "ragtap.requests" and r.levelno == logging.DEBUG]
    assert any("exchange: route=/v1/chat/completions model=m" in line and "recognition=explicit" in line and "injected=True status=200" in line for line in debug)
    assert any(line.startswith("request: method=POST path=/v1/chat/completions status=200") for line in debug)
    assert not any("secret-in-query" in r.getMessage() for r in caplog.records)  # never the query string


def test_score_warns_about_lines_without_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, embedder) -> None:
    use_embedder(monkeypatch, embedder)
    lines = [
        {"question": "What is the capital of France?", "documents": ["Paris is the capital of France."], "answer": "Paris."},
        {"question": "What is the capital of France?", "documents": [], "answer": "Paris."},
        {"question": "What is the capital of Spain?", "answer": "Madrid."},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["score", str(path), "--quiet", "--out", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "ragtap: warning: 2 of 3 lines have no documents" in err
