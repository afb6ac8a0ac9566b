"""Apps that stop reading a RAG stream: how much memory does ragtap hold for them while they stall?

    .venv/bin/python bench/stalled_reader.py                        # 4 stalled chat streams, a 3 MB answer each
    .venv/bin/python bench/stalled_reader.py --kind responses --apps 8 --json /tmp/stalled.json

The upstream (its own process, started here) answers every injected stream with a JSON reply whose answer is
`--answer-mb` MB (with `--where support`, the supporting content is that long instead: the app never sees it, ragtap
reads all of it while sending nothing but keep-alives), in `--piece-chars` characters per event as LLM servers
send tokens, all but the last event, and then holds the stream open.  Each app sends its request, reads the first
bytes, then stops reading until ragtap has read all there is (its memory is steady: with `--where answer` it reads
until the socket buffers between it and the app are full), keeping the text it split so far; then the upstream
finishes and the apps read the rest.  ragtap runs in this process (a `RagtapServer`, scoring off: only the stream path is
measured) under tracemalloc, so the figure is exact and does not depend on the allocator or the machine's load:
the Python memory held while the apps stall, in all and per app (issue 24: the kept text as a list of its pieces
cost ~15 times the text; as TextPieces about its size).  The RSS of a real
`ragtap serve` moves with the allocator's high-water marks and says less (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time
import tracemalloc
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ragtap (a comparison runs the bench from another checkout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the upstream (run as `--upstream PORT`) ---------------------------------------------------------------------


def reply_text(mb: float, where: str) -> str:
    long = ("Refund policy: a refund may be requested within 30 days of delivery. " * (int(mb * 1e6) // 70 + 1))[: int(mb * 1e6)]
    short = "Within 30 days of delivery."
    return json.dumps({"answer": long, "supporting_content": short} if where == "answer" else {"answer": short, "supporting_content": long})


def chat_stream(text: str, piece: int) -> bytes:
    out = []
    for i in range(0, len(text), piece):
        event = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": text[i : i + piece]}, "finish_reason": None}]}
        out.append(b"data: " + json.dumps(event).encode() + b"\n\n")
    end = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return b"".join(out) + b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n"


def responses_stream(text: str, piece: int) -> bytes:
    from ragtap.testing.responses_wire import ResponsesWire
    from ragtap.testing.upstream import ScriptedReply

    return ResponsesWire({"model": "m", "instructions": "supporting_content", "stream": True}, ScriptedReply(text, piece_chars=piece), 1).sse_bytes()


def serve_upstream(port: int, mb: float, where: str, piece: int) -> None:
    """The reply's stream, all but its last event, then -- while held (`POST /hold`) -- nothing until `POST /finish`:
    ragtap has then read (and kept) all the text there is, and the bench can measure what it keeps."""
    text = reply_text(mb, where)
    streams = {"chat": chat_stream(text, piece), "responses": responses_stream(text, piece)}
    finish = asyncio.Event()
    finish.set()

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        data = streams["responses" if request.path.endswith("/responses") else "chat"]
        last = data.rindex(b"\n\n", 0, len(data) - 2) + 2  # where the last event starts
        for start in range(0, last, 16384):  # network writes of 16 kB, as a busy server sends
            await response.write(data[start : min(last, start + 16384)])
        await finish.wait()
        await response.write(data[last:])
        await response.write_eof()
        return response

    async def hold(request: web.Request) -> web.Response:
        finish.clear()
        return web.Response(text="held")

    async def release(request: web.Request) -> web.Response:
        finish.set()
        return web.Response(text="released")

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/v1/responses", handle)
    app.router.add_post("/hold", hold)
    app.router.add_post("/finish", release)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# --- the apps ------------------------------------------------------------------------------------------------------


def request_body(kind: str) -> tuple[str, dict[str, Any]]:
    question = "How long do I have to ask for a refund?"
    documents = ["Refund policy: a refund may be requested within 30 days of delivery."]
    marker = {"ragtap": {"question": question, "documents": documents}}
    if kind == "chat":
        return "/v1/chat/completions", {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": question}], **marker}
    return "/v1/responses", {"model": "gpt-4.1-mini", "stream": True, "input": question, **marker}


async def stalled_app(session: aiohttp.ClientSession, url: str, body: dict[str, Any], stalled: asyncio.Event, resume: asyncio.Event) -> int:
    async with session.post(url, json=body) as response:
        assert response.status == 200, response.status
        received = len(await response.content.read(1))  # under way
        stalled.set()
        await resume.wait()  # ... and not reading meanwhile
        received += len(await response.read())
        return received


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from ragtap.config import load_config
    from ragtap.proxy.server import RagtapServer

    upstream_port = free_port()
    upstream = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--upstream", str(upstream_port), "--answer-mb", str(args.answer_mb), "--where", args.where,
        "--piece-chars", str(args.piece_chars),
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        async with asyncio.timeout(60):
            while True:  # the upstream listens
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", upstream_port)
                    writer.close()
                    break
                except OSError:
                    await asyncio.sleep(0.1)
        flags = {"server": {"upstream": f"http://127.0.0.1:{upstream_port}/v1", "port": 0, "shutdown_grace_s": 2.0},
                 "scoring": {"enabled": False}, "prometheus": {"enabled": False}}
        async with RagtapServer(load_config(flags=flags, environ={})) as server:
            path, body = request_body(args.kind)
            url = f"http://127.0.0.1:{server.port}{path}"
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=args.stall + 120)) as session:
                await stalled_app(session, url, body, asyncio.Event(), _set_event())  # warm-up: one stream read through
                control = f"http://127.0.0.1:{upstream_port}"
                await (await session.post(control + "/hold")).read()
                stalled = [asyncio.Event() for _ in range(args.apps)]
                resume = asyncio.Event()
                tracemalloc.start()
                try:
                    apps = [asyncio.create_task(stalled_app(session, url, body, s, resume)) for s in stalled]
                    await asyncio.wait_for(asyncio.gather(*(s.wait() for s in stalled)), 60)
                    held, waited = await _until_steady(args.stall)
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                    await (await session.post(control + "/finish")).read()
                    resume.set()
                received = await asyncio.wait_for(asyncio.gather(*apps), 300)
    finally:
        upstream.send_signal(signal.SIGTERM)
        await asyncio.wait_for(upstream.wait(), 30)
    return {
        "kind": args.kind, "apps": args.apps, "mb": args.answer_mb, "where": args.where, "piece_chars": args.piece_chars, "waited_s": round(waited, 1),
        "held_while_stalled_mb": round(held / 1e6, 2), "peak_mb": round(peak / 1e6, 2), "held_per_app_mb": round(held / 1e6 / args.apps, 2),
        "bytes_received_per_app": sorted(set(received)),
    }


async def _until_steady(max_wait: float) -> tuple[int, float]:
    """tracemalloc's current size once ragtap has read all it can (flat over 3 s), bounded by `max_wait`."""
    started = time.monotonic()
    samples = [tracemalloc.get_traced_memory()[0]]
    while time.monotonic() - started < max_wait:
        await asyncio.sleep(1.0)
        samples.append(tracemalloc.get_traced_memory()[0])
        recent = samples[-4:]
        if len(recent) == 4 and max(recent) - min(recent) < 64 * 1024:
            break
    return samples[-1], time.monotonic() - started


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", choices=("chat", "responses"), default="chat")
    parser.add_argument("--apps", type=int, default=4)
    parser.add_argument("--answer-mb", type=float, default=3.0)
    parser.add_argument("--where", choices=("answer", "support"), default="answer", help="which field is --answer-mb long")
    parser.add_argument("--piece-chars", type=int, default=16)
    parser.add_argument("--stall", type=float, default=600.0, help="the longest the apps stall (they resume once ragtap's memory is steady)")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)  # internal: run as the upstream on this port
    args = parser.parse_args()
    if args.upstream:
        serve_upstream(args.upstream, args.answer_mb, args.where, args.piece_chars)
        return
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
