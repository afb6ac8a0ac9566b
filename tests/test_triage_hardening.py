"""The triage page attacked (issue 24): who may read it (exact loopback, the Host header, allowed hosts, its own
token), what its API does with hostile input (finding 9), and the settings that broke it (finding 8, poll_seconds,
the address named when its listener cannot start).

Each runs against a real ragtap (`RagtapServer` on 127.0.0.1, a real SQLite store, plain HTTP with a chosen Host
header: what a browser that reached ragtap by another name sends) or `ragtap serve` in a subprocess.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pg_server import running_postgres
from test_store import new_database
from triage_rows import captured

from ragtap.config import ConfigError, load_config
from ragtap.proxy.server import RagtapServer, metrics_exposure_warning
from ragtap.proxy.state import CAPTURE_STORE
from ragtap.proxy.triage import triage_unavailable, triage_warning
from ragtap.triage.access import host_name, is_loopback_host

from conftest import ENV

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def postgres_server() -> Any:
    yield from running_postgres()


@contextlib.asynccontextmanager
async def ragtap(tmp_path: Path, **sections: dict[str, Any]) -> AsyncIterator[tuple[str, int, Any]]:
    """A ragtap (no scoring: the rows are written directly) whose store holds three rows; (base URL, port, store)."""
    flags: dict[str, dict[str, Any]] = {"server": {"upstream": "http://127.0.0.1:9/v1", "port": 0, "shutdown_grace_s": 1.0},
                                        "scoring": {"enabled": False}, "store": {"path": str(tmp_path / "c.sqlite3"), "capture": "all"}}
    for name, values in sections.items():
        flags.setdefault(name, {}).update(values)
    async with RagtapServer(load_config(environ=ENV, flags=flags)) as server:
        store = server.app[CAPTURE_STORE]
        assert await store.add_many([captured(i) for i in range(3)]) == 3
        yield f"http://127.0.0.1:{server.port}", server.port, store


async def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http:
        async with http.get(url, headers=headers or {}) as response:
            return response.status


# ------------------------------------------------------------------------------------------------ who may read
@pytest.mark.parametrize(("name", "loopback"), [
    ("localhost", True), ("LOCALHOST", True), ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
    ("localhost.example.com", False), ("localhost6", False), ("127.evil.com", False), ("127.0.0.1.nip.io", False),
    ("::ffff:8.8.8.8", False), ("0.0.0.0", False), ("10.0.0.5", False), ("", False),
])
def test_loopback_is_matched_exactly(name: str, loopback: bool) -> None:
    assert is_loopback_host(name) is loopback


@pytest.mark.parametrize(("header", "name"), [
    ("localhost:8787", "localhost"), ("[::1]:8787", "::1"), ("Triage.Example.COM", "triage.example.com"),
    ("localhost:1@evil.com", None), ("evil.com/localhost", None), ("localhost evil", None), ("a:b:c", None),
])
def test_the_host_header_is_parsed_strictly(header: str, name: str | None) -> None:
    assert host_name(header) == name


async def test_the_api_answers_loopback_names_and_allowed_hosts_only_exactly(tmp_path: Path) -> None:
    async with ragtap(tmp_path, triage={"allowed_hosts": ["triage.example.com", "10.0.0.5"]}) as (base, port, _):
        api = f"{base}/triage/api/interactions"
        answered = {host: await status_of(api, {"Host": host}) for host in (
            f"localhost:{port}", f"127.0.0.1:{port}", f"127.3.4.5:{port}", f"[::1]:{port}", f"LOCALHOST:{port}",
            f"triage.example.com:{port}", "triage.example.com", f"10.0.0.5:{port}",
            f"localhost.example.com:{port}", f"localhost:1@evil.com", f"evil.example:{port}", f"triage.example.com.evil.net:{port}",
            f"10.0.0.6:{port}", "")}
    assert answered == {
        f"localhost:{port}": 200, f"127.0.0.1:{port}": 200, f"127.3.4.5:{port}": 200, f"[::1]:{port}": 200, f"LOCALHOST:{port}": 200,
        f"triage.example.com:{port}": 200, "triage.example.com": 200, f"10.0.0.5:{port}": 200,
        f"localhost.example.com:{port}": 403, "localhost:1@evil.com": 403, f"evil.example:{port}": 403,
        f"triage.example.com.evil.net:{port}": 403, f"10.0.0.6:{port}": 403, "": 403,
    }


async def test_a_remote_name_is_refused_until_allowed(tmp_path: Path) -> None:
    """The shape of issue 24's report: a browser elsewhere reaches the page by the machine's name; without a token
    and without `allowed_hosts` every API call is a 403 (DNS-rebinding protection), with it the call answers."""
    async with ragtap(tmp_path) as (base, port, _):
        assert await status_of(f"{base}/triage/", {"Host": f"ragtap-box.internal:{port}"}) == 200  # the page: no data
        assert await status_of(f"{base}/triage/api/meta", {"Host": f"ragtap-box.internal:{port}"}) == 403
    async with ragtap(tmp_path, triage={"allowed_hosts": ["ragtap-box.internal"]}) as (base, port, _):
        assert await status_of(f"{base}/triage/api/meta", {"Host": f"ragtap-box.internal:{port}"}) == 200


async def test_the_page_has_its_own_token_and_falls_back_to_the_metrics_token(tmp_path: Path) -> None:
    async with ragtap(tmp_path, prometheus={"token": "m-token"}) as (base, _, _):
        api = f"{base}/triage/api/meta"
        assert [await status_of(api, {"Authorization": f"Bearer {t}"} if t else None) for t in (None, "wrong", "m-token")] == [401, 401, 200]
    async with ragtap(tmp_path, prometheus={"token": "m-token"}, triage={"token": "t-token"}) as (base, port, _):
        api = f"{base}/triage/api/meta"
        assert [await status_of(api, {"Authorization": f"Bearer {t}"}) for t in ("m-token", "t-token")] == [401, 200]
        assert await status_of(f"{base}/metrics", {"Authorization": "Bearer m-token"}) == 200  # /metrics keeps its own
        assert await status_of(f"{base}/metrics", {"Authorization": "Bearer t-token"}) == 401
        # with a token, a request by any name is answered: the token, not the Host, is the proof
        assert await status_of(api, {"Authorization": "Bearer t-token", "Host": f"elsewhere.example:{port}"}) == 200
    assert load_config(environ={"RAGTAP_TRIAGE_TOKEN": "env-token"}).triage.token == "env-token"


@pytest.mark.parametrize(("listen_host", "served"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("localhost.example.com", False), ("127.evil.com", False), ("0.0.0.0", False),
])
def test_the_page_is_served_without_a_token_only_on_an_exact_loopback_listener(tmp_path: Path, listen_host: str, served: bool) -> None:
    config = load_config(environ={}, flags={"triage": {"listen_port": 9999, "listen_host": listen_host}})
    reason = triage_unavailable(config, object())
    assert (reason is None) is served, reason
    assert (metrics_exposure_warning(load_config(environ={}, flags={"server": {"host": listen_host}})) is None) is served


def test_serving_every_address_without_a_token_or_allowed_hosts_warns() -> None:
    base = {"server": {"host": "0.0.0.0"}, "triage": {"allow_unauthenticated": True}}
    warning = triage_warning(load_config(environ={}, flags=base))
    assert warning is not None and "allowed_hosts" in warning
    assert triage_warning(load_config(environ={}, flags={**base, "triage": {"allow_unauthenticated": True, "allowed_hosts": ["box"]}})) is None
    assert triage_warning(load_config(environ={"RAGTAP_TRIAGE_TOKEN": "t"}, flags=base)) is None


@pytest.mark.parametrize("bad", ["https://box", "box:8787", "box/path", "user@box", "bad host"])
def test_allowed_hosts_are_names_or_addresses(bad: str) -> None:
    with pytest.raises(ConfigError, match="triage.allowed_hosts"):
        load_config(environ={}, flags={"triage": {"allowed_hosts": [bad]}})


# ------------------------------------------------------------------------------------ finding 9: hostile input
async def test_a_deeply_nested_label_body_is_a_400_not_a_500(tmp_path: Path) -> None:
    async with ragtap(tmp_path) as (base, _, store):
        body = b"[" * 5000 + b"]" * 5000  # 10 KB: within the 16 KB limit, too deep for the JSON parser
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http:
            async with http.post(f"{base}/triage/api/interactions/row-000001/labels", data=body,
                                 headers={"Content-Type": "application/json"}) as response:
                assert response.status == 400
                assert (await response.json())["error"] == "label body is nested too deeply: expected a flat JSON object"
            nested = b'{"verdict_right": true, "note": ' + b"[" * 5000 + b"]" * 5000 + b"}"
            async with http.post(f"{base}/triage/api/interactions/row-000001/labels", data=nested[:16000],
                                 headers={"Content-Type": "application/json"}) as response:
                assert response.status == 400
        assert store.stats.read_failures == 0


@pytest.mark.parametrize("query", ["q=tower%00", "model=m%00x", "user=%00", "session=a%00", "cursor=1.0_row%00", "verdict=refusal%00"])
async def test_a_nul_in_a_filter_is_a_400_and_the_store_is_fine(tmp_path: Path, query: str) -> None:
    async with ragtap(tmp_path) as (base, _, store):
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http:
            async with http.get(f"{base}/triage/api/interactions?{query}") as response:
                assert (response.status, (await response.json())["error"].split(": ", 1)[1]) == (400, "contains a NUL character")
            async with http.get(f"{base}/triage/api/interactions") as response:
                assert response.status == 200 and len((await response.json())["items"]) == 3
        assert store.stats.read_failures == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_nul_in_an_id_or_a_note_is_a_400_on_either_backend(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> None:
    """On PostgreSQL a NUL anywhere in a query made the read fail (503 "the capture store cannot answer"), and the
    reader's connection was thrown away; it is refused before the store now."""
    where = {"url": new_database(request.getfixturevalue("postgres_server")), "path": None} if backend == "postgresql" else {}
    async with ragtap(tmp_path, store=where) as (base, _, store):
        api = f"{base}/triage/api/interactions"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http:
            async with http.get(f"{api}/row-000001%00") as response:
                assert (response.status, (await response.json())["error"]) == (400, "interaction id: contains a NUL character")
            async with http.post(f"{api}/row-000001/labels", json={"verdict_right": True, "note": "fine\x00"}) as response:
                assert (response.status, (await response.json())["error"]) == (400, "note: contains a NUL character")
            async with http.get(f"{api}?q=tower%00") as response:
                assert response.status == 400
            async with http.get(f"{api}/row-000001") as response:
                assert response.status == 200 and (await response.json())["label"] is None  # nothing was stored
        assert store.stats.read_failures == 0


# ------------------------------------------------------------------------- finding 8 and the smaller settings
@pytest.mark.parametrize(("path", "route"), [
    ("/v1", "/v1"), ("/v1/triage", "/v1"), ("/healthz", "/healthz"), ("/metrics", "/metrics"), ("/chat", "/chat"),
    ("/responses/x", "/responses"),
])
def test_a_triage_path_on_a_proxy_route_is_a_one_line_error(path: str, route: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(environ={}, flags={"triage": {"path": path}})
    assert f"would take the proxy's route {route}" in str(error.value) and "\n" not in str(error.value)


def test_triage_paths_that_take_no_route_are_fine() -> None:
    for path in ("/triage", "/v1x", "/health", "/review/page"):
        assert load_config(environ={}, flags={"triage": {"path": path}}).triage.prefix == path
    # its own listener: the proxy's routes are not on it
    assert load_config(environ={}, flags={"triage": {"path": "/v1", "listen_port": 0}}).triage.prefix == "/v1"
    # /metrics on its own listener: the proxy port's /metrics is free
    assert load_config(environ={}, flags={"triage": {"path": "/metrics"}, "prometheus": {"listen_port": 0}}).triage.prefix == "/metrics"


async def test_the_default_triage_path_leaves_every_proxy_route_working(tmp_path: Path) -> None:
    async with ragtap(tmp_path) as (base, _, _):
        assert await status_of(f"{base}/healthz") == 200 and await status_of(f"{base}/metrics") == 200


def serve(tmp_path: Path, config: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "ragtap.toml"
    path.write_text(config)
    return subprocess.run([sys.executable, "-m", "ragtap", "serve", "--config", str(path), *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=90, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize(("config", "line"), [
    ('[triage]\npath = "/metrics"\n', "ragtap: config error: triage.path: '/metrics' would take the proxy's route /metrics"),
    ('[triage]\npath = "/v1"\n', "ragtap: config error: triage.path: '/v1' would take the proxy's route /v1"),
    ('[store]\nurl = "postgresql://ragtap:hunter2@db:notaport/ragtap"\n',
     "ragtap: config error: store.url: not a URL (Port could not be cast to integer value as 'notaport')"),
    ('[store]\nurl = "postgresql://ragtap:hunter2@[::1/ragtap"\n', "ragtap: config error: store.url: not a URL (Invalid IPv6 URL)"),
    ('[store]\nurl = "postgresql://"\n', "ragtap: config error: store.url: names no host and no database"),
    ('[triage]\npoll_seconds = 0.001\n', "ragtap: config error: triage.poll_seconds: expected 0 (no live updates) or at least 0.5"),
])
def test_settings_that_broke_the_page_or_the_store_are_one_line_at_start(tmp_path: Path, config: str, line: str) -> None:
    result = serve(tmp_path, config, "--port", "0")
    assert result.returncode == 2, result.stderr
    [only] = result.stderr.strip().splitlines()
    assert only.startswith(line) and "hunter2" not in only and "Traceback" not in result.stderr


def test_a_triage_listener_that_cannot_start_is_named_in_the_error(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the page's listener cannot bind it; the proxy's can start
    result = serve(tmp_path, '[scoring]\nenabled = false\n[triage]\nlisten_host = "192.0.2.1"\nlisten_port = 0\n'
                   '[prometheus]\ntoken = "t"\n', "--port", "0")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("ragtap: cannot listen on 192.0.2.1:0: ")
