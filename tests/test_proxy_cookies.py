"""Cookies an upstream sets must not travel to the upstream on other apps' requests (ragtap keeps no jar).

The upstream is addressed as `localhost` (aiohttp's default jar ignores cookies from bare IP addresses, which
would hide the problem), and the app keeps no cookies itself (a DummyCookieJar): any Cookie header the upstream
receives would have been added by ragtap.
"""

from __future__ import annotations

import aiohttp

from ragtap.config import load_config
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream

from conftest import rag_messages


def script(body):  # type: ignore[no-untyped-def]
    return ScriptedReply("plain answer", headers={"Set-Cookie": "__cf_bm=app-a-session; Path=/"})


async def test_upstream_cookies_are_not_replayed(embedder) -> None:  # type: ignore[no-untyped-def]
    bodies = [{"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]}, {"model": "m", "messages": rag_messages()}]
    async with ScriptedUpstream(script) as upstream:
        config = load_config(flags={"server": {"upstream": f"http://localhost:{upstream.port}/v1", "port": 0}}, environ={})
        async with RagtapServer(config, embedder=embedder) as server, aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as app:
            for _ in range(2):
                for body in bodies:
                    async with app.post(f"http://127.0.0.1:{server.port}/v1/chat/completions", json=body) as response:
                        assert response.status == 200
                        assert "__cf_bm" in response.headers.get("Set-Cookie", "")  # the app still sees it
    assert len(upstream.requests) == 4
    assert all("Cookie" not in r.headers for r in upstream.requests)
