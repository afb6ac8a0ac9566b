"""A bare aiohttp passthrough proxy: the floor for any Python/aiohttp proxy, used as a peer in the benchmark.

    .venv/bin/python bench/peer_passthrough.py --upstream http://127.0.0.1:9101 --port 9110

It does what every proxy must and nothing else: read the request, send it upstream on a pooled keep-alive
session, and return the reply (whole when its length is known, chunk by chunk otherwise), dropping
hop-by-hop headers.  No parsing, no logging, uvloop when installed.
"""

from __future__ import annotations

import argparse
import asyncio

import aiohttp
from aiohttp import web

HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade", "te", "trailer"})


async def serve(upstream: str, host: str, port: int) -> None:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256, keepalive_timeout=30),
        auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=None, sock_read=600),
    )

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        async with session.request(request.method, upstream + request.path_qs, data=body, headers=headers, allow_redirects=False) as reply:
            out_headers = {k: v for k, v in reply.headers.items() if k.lower() not in HOP}
            if reply.content_length is not None:
                return web.Response(status=reply.status, body=await reply.read(), headers=out_headers)
            out = web.StreamResponse(status=reply.status, headers=out_headers)
            await out.prepare(request)
            async for chunk in reply.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    server = web.Server(handle, access_log=None)
    listener = await asyncio.get_running_loop().create_server(server, host, port, backlog=1024, reuse_address=True)
    print(f"passthrough ready on http://{host}:{listener.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="bare aiohttp passthrough proxy (benchmark peer)")
    parser.add_argument("--upstream", required=True, help="scheme://host:port of the upstream (paths are kept)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9110)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(serve(args.upstream.rstrip("/"), args.host, args.port))
    except ImportError:
        asyncio.run(serve(args.upstream.rstrip("/"), args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
