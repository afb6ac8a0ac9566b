"""Issue 13 #8 over real HTTP: an upstream 400 on an injected request whose body is cut or stalls reaches the app
as a 400 in the OpenAI shape (was a ragtap 500), and the exchange is counted."""

from __future__ import annotations

import asyncio

import openai
import pytest
from aiohttp import web

from ragtap.config import load_config
from ragtap.proxy.server import RagtapServer

from conftest import ENV, Collector, explicit, rag_messages


MODE = web.AppKey("mode", str)


async def broken_400(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(status=400, headers={"Content-Type": "application/json"})
    response.content_length = 500  # promises 500 bytes...
    await response.prepare(request)
    await response.write(b'{"error": {"message": "response_format is not supp')
    if request.app[MODE] == "cut":
        request.transport.close()  # ...and hangs up
    else:
        await asyncio.sleep(5)  # ...and stalls past ragtap's read timeout
    return response


@pytest.mark.parametrize("mode", ["cut", "stall"])
async def test_a_broken_400_on_an_injected_request_stays_a_400(mode: str) -> None:
    app = web.Application()
    app[MODE] = mode
    app.router.add_post("/v1/chat/completions", broken_400)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    collector = Collector()
    config = load_config(environ=ENV, flags={"server": {"upstream": f"http://127.0.0.1:{port}/v1", "port": 0, "read_timeout_s": 1.0},
                                             "scoring": {"enabled": False}})
    try:
        async with RagtapServer(config, exporters=[collector]) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=10)
            with pytest.raises(openai.BadRequestError) as caught:
                await client.chat.completions.create(model="m", messages=rag_messages(), extra_body=explicit())
            assert caught.value.status_code == 400 and caught.value.code == "upstream_broken_error_body"
            record = await collector.exchange()
            assert record.status == 400 and record.error_type is not None
            await client.close()
    finally:
        await runner.cleanup()
