"""Issue 13 #6 (slowloris) over real TCP on 127.0.0.1: slow or idle clients are closed after their timeout, each
close is logged at INFO with a reason code and counted, and /healthz answers while hundreds of slow connections
are open.  On the previous code the slow connections stayed open (aiohttp's only timer is its 3630 s keep-alive)
and nothing was logged: every test here fails on it (the 200-connection one at its bounded wait for the closes)."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from conftest import ENV, RecordingUpstream, fixed
from ragtap.config import load_config
from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.proxy.server import RagtapServer
from ragtap.proxy.app import WATCHDOG
from ragtap.testing.upstream import ScriptedReply

FAST = {"clients": {"header_timeout_s": 0.6, "idle_timeout_s": 0.8, "body_timeout_s": 0.6}}
HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


async def _slow_client(port: int, stop: asyncio.Event) -> bool:
    """Send a request's headers one line every 0.2 s (never finishing them); True if ragtap closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(HEAD)
        for n in range(200):  # bounded: 40 s at most, far beyond any timeout here
            if stop.is_set():
                return False
            try:
                data = await asyncio.wait_for(reader.read(1024), 0.2)
            except TimeoutError:
                writer.write(f"X-Slow-{n}: {n}\r\n".encode())
                continue
            if data == b"":
                return True  # EOF: ragtap closed it
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    finally:
        writer.close()


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes | None:
    """Everything ragtap sent until it closed the connection, or None if it was still open after `seconds`."""
    received = b""
    try:
        async with asyncio.timeout(seconds):
            while True:
                data = await reader.read(65536)
                if not data:
                    return received
                received += data
    except TimeoutError:
        return None
    except (ConnectionResetError, BrokenPipeError):
        return received


def _rejections(prometheus: PrometheusExporter) -> dict[str, float]:
    text = prometheus.render()[0].decode()
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "ragtap_client_rejections":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels["reason"]] = sample.value
    return counts


async def test_healthz_answers_while_200_slow_clients_are_open_and_they_are_closed(start_proxy, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ragtap.clients")
    # 2 s: long enough for all 200 to be open at once on a loaded machine, so that /healthz competes with them all.
    proxy = await start_proxy(flags={"clients": {"header_timeout_s": 2.0, "idle_timeout_s": 2.0}})
    watchdog = proxy.server.app[WATCHDOG]
    stop = asyncio.Event()
    slow = [asyncio.create_task(_slow_client(proxy.server.port, stop)) for _ in range(200)]
    try:
        async with asyncio.timeout(10):  # all 200 connected
            while watchdog.open_connections < 200:
                await asyncio.sleep(0.02)
        assert watchdog.closed == {}  # none closed yet: /healthz is asked with all 200 open
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(5), session.get(f"{proxy.url}/healthz") as response:
                assert response.status == 200
                assert (await response.json())["status"] == "ok"
        async with asyncio.timeout(15):
            closed_by_ragtap = await asyncio.gather(*slow)
    finally:
        stop.set()
        await asyncio.gather(*slow, return_exceptions=True)
    assert all(closed_by_ragtap)  # they kept sending a header line every 0.2 s: still closed after 2 s
    assert watchdog.closed.get("header_timeout", 0) >= 200
    lines = [r for r in caplog.records if r.name == "ragtap.clients" and r.levelno == logging.INFO]
    assert any("reason=header_timeout" in r.getMessage() for r in lines)
    assert len(lines) < 200  # a flood of closes is summarised, not one line each
    assert any("header_timeout=" in r.getMessage() for r in lines)


async def test_an_idle_connection_is_closed_before_and_after_a_request(start_proxy, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ragtap.clients")
    proxy = await start_proxy(flags=FAST)
    # nothing sent at all
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.server.port)
    assert await _closed_within(reader, 5) == b""
    writer.close()
    # a keep-alive connection after a complete request
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.server.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    received = await _closed_within(reader, 5)
    writer.close()
    assert received is not None and received.startswith(b"HTTP/1.1 200") and b'"status": "ok"' in received
    assert proxy.server.app[WATCHDOG].closed.get("idle_timeout") == 2
    assert any("reason=idle_timeout" in r.getMessage() for r in caplog.records if r.name == "ragtap.clients")


async def test_a_body_that_trickles_gets_408_and_the_upstream_is_not_called(embedder, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ragtap.clients")
    prometheus = PrometheusExporter()
    async with RecordingUpstream() as upstream:
        config = load_config(environ=ENV, flags={"server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 1.0}, **FAST})
        async with RagtapServer(config, embedder=embedder, exporters=[prometheus]) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(HEAD + b"Content-Length: 1000\r\n\r\n" + b'{"model": "m", ')
            received = b""
            for _ in range(25):  # one byte every 0.2 s (never 1000 bytes within 0.6 s) until ragtap answers
                try:
                    received = await asyncio.wait_for(reader.read(65536), 0.2)
                    break
                except TimeoutError:
                    writer.write(b" ")
            rest = await _closed_within(reader, 5)
            writer.close()
            received += rest or b"" 
        assert upstream.requests == []
    assert received is not None and received.startswith(b"HTTP/1.1 408")
    assert b'"code":"request_timeout"' in received
    assert _rejections(prometheus).get("body_timeout") == 1
    assert any("reason=body_timeout" in r.getMessage() for r in caplog.records if r.name == "ragtap.clients")


async def test_over_the_connection_limit_the_oldest_slow_connection_makes_room(start_proxy) -> None:
    # Timeouts far away: only the limit can close anything here.
    proxy = await start_proxy(flags={"clients": {"max_connections": 20, "header_timeout_s": 60, "idle_timeout_s": 60}})
    conns = []
    for _ in range(40):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.server.port)
        writer.write(HEAD)
        conns.append((reader, writer))
    try:
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(5), session.get(f"{proxy.url}/healthz") as response:
                assert response.status == 200
        watchdog = proxy.server.app[WATCHDOG]
        assert watchdog.open_connections <= 20
        assert watchdog.closed.get("connection_limit", 0) >= 21
        # the oldest went first
        assert await _closed_within(conns[0][0], 2) == b""
        assert await _closed_within(conns[-1][0], 0.3) is None
    finally:
        for _, writer in conns:
            writer.close()


async def test_a_slow_upstream_answer_is_not_cut_by_the_client_timeouts(start_proxy) -> None:
    """The timeouts are the client's: a request being answered (here, slower than every client timeout) is not
    touched."""
    proxy = await start_proxy(fixed(ScriptedReply("slow but fine", delay_s=1.5)), flags=FAST)
    completion = await proxy.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "slow but fine"
    assert proxy.server.app[WATCHDOG].closed == {}
