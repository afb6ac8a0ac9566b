"""Shared fixtures for the proxy tests: the real ragtap between the official openai SDK and the scripted upstream.

- `embedder`: the MiniLM embedder, loaded once per session.
- `Collector`: an exporter that records every hook, so a test can await the n-th assessment (bounded waits).
- `RecordingUpstream`: the scripted upstream plus a record of the exact bytes it sent back, and an optional
  `cutter` that chooses where the SSE byte stream is split into network writes (from the real stream bytes).
- `start_proxy`: a factory fixture that starts an (upstream, ragtap, SDK client) trio with a script and config
  overrides, and tears all of it down after the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from aiohttp import web

from ragtap.config import Config, load_config
from ragtap.exchange import ExchangeRecord
from ragtap.exporters.base import Exporter
from ragtap.proxy.server import RagtapServer
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, echo_script
from ragtap.types import Assessment, Interaction

# Keep the ambient environment (RAGTAP_* set by a developer's shell) out of the tests' configs.
ENV: dict[str, str] = {}
# Nothing a test runs may write into the real home: the default capture store and the identity salt live under
# $XDG_DATA_HOME/ragtap (ragtap.config.data_dir), for this process and the `ragtap serve` processes tests start.
# Each test gets a folder of its own (below); this one covers what runs outside a test (session fixtures).
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="ragtap-test-data-")


@pytest.fixture(autouse=True)
def _data_dir_of_this_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


# --------------------------------------------------------------------------------------------------------------
# The embedder: loaded once
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from ragtap.embedding.factory import make_embedder

    return make_embedder("minilm")


class RecordingEmbedder:
    """Wraps an embedder and records the texts of every call (how many calls a batch makes, and with what)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def use_embedder(monkeypatch: pytest.MonkeyPatch, instance: Any, name: str = "test-instance") -> None:
    """Make commands that build their embedder from the config (`ragtap.wiring.build_embedder`) use `instance`:
    registered under `name` and selected through RAGTAP_EMBEDDER, as a user would select any embedder."""
    from ragtap.embedding.factory import register_embedder

    register_embedder(name, lambda **_options: instance)
    monkeypatch.setenv("RAGTAP_EMBEDDER", name)


# --------------------------------------------------------------------------------------------------------------
# The collector: an exporter that records and lets a test wait (always with a timeout)
# --------------------------------------------------------------------------------------------------------------


class Collector(Exporter):
    def __init__(self) -> None:
        self.started: list[ExchangeRecord] = []
        self.finished: list[ExchangeRecord] = []
        self.passthrough: list[ExchangeRecord] = []
        self.scored: list[tuple[Interaction, Assessment]] = []
        self.dropped: list[str] = []
        self.failed: list[tuple[Interaction, BaseException]] = []
        self.depths: list[int] = []
        self.shut_down = False
        self._changed = asyncio.Event()

    def _notify(self) -> None:
        self._changed.set()

    # hooks ------------------------------------------------------------------------------------------------------
    def exchange_started(self, exchange: ExchangeRecord) -> None:
        self.started.append(exchange)
        self._notify()

    def exchange_finished(self, exchange: ExchangeRecord) -> None:
        self.finished.append(exchange)
        self._notify()

    def passthrough_finished(self, exchange: ExchangeRecord) -> None:
        self.passthrough.append(exchange)
        self._notify()

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        self.scored.append((interaction, assessment))
        self._notify()

    def scoring_dropped(self, reason: str) -> None:
        self.dropped.append(reason)
        self._notify()

    def scoring_failed(self, interaction: Interaction, error: BaseException) -> None:
        self.failed.append((interaction, error))
        self._notify()

    def queue_depth(self, depth: int) -> None:
        self.depths.append(depth)

    def shutdown(self) -> None:
        self.shut_down = True

    # waiting ----------------------------------------------------------------------------------------------------
    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            self._changed.clear()
            if predicate():
                return
            try:
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))
            except TimeoutError:
                pass

    async def assessment(self, n: int = 1, timeout: float = 10.0) -> tuple[Interaction, Assessment]:
        """The n-th (1-based) scored interaction."""
        await self.wait_until(lambda: len(self.scored) >= n, timeout, f"assessment #{n}")
        return self.scored[n - 1]

    async def exchange(self, n: int = 1, timeout: float = 10.0) -> ExchangeRecord:
        """The n-th (1-based) finished chat exchange."""
        await self.wait_until(lambda: len(self.finished) >= n, timeout, f"finished exchange #{n}")
        return self.finished[n - 1]

    async def settle(self, total: int, timeout: float = 15.0) -> None:
        """Wait until `total` interactions were scored, dropped or failed."""
        await self.wait_until(lambda: len(self.scored) + len(self.dropped) + len(self.failed) >= total, timeout, f"{total} scoring outcomes")


# --------------------------------------------------------------------------------------------------------------
# The upstream: scripted, plus the bytes it sent and a chooser of SSE cuts
# --------------------------------------------------------------------------------------------------------------

Cutter = Callable[[bytes], Sequence[int]]


class RecordingUpstream(ScriptedUpstream):
    """`sent[i]` is the exact response body bytes of the i-th response (the full SSE stream for streams)."""

    def __init__(self, script=echo_script, **kwargs: Any) -> None:  # type: ignore[no-untyped-def]
        super().__init__(script, **kwargs)
        self.sent: list[bytes] = []
        self.cutter: Cutter | None = None
        self.write_delay_s: float | None = None  # when set, overrides chunk_delay_s of cut streams
        self.transform: Callable[[bytes], bytes] | None = None  # rewrites the SSE bytes before they are sent
        self.compress: bool | str = False  # True/"force": gzip JSON chat replies (and errors) when the request's Accept-Encoding allows
        self.stream_finished: list[bool] = []  # per stream: True when every byte was written
        self.stream_errors: list[BaseException | None] = []  # per stream: what stopped the upstream's writes

    async def _models(self, request: web.Request) -> web.Response:
        response = await super()._models(request)
        self.sent.append(bytes(response.body))  # type: ignore[arg-type]
        return response

    async def _embeddings(self, request: web.Request) -> web.Response:
        response = await super()._embeddings(request)
        self.sent.append(bytes(response.body))  # type: ignore[arg-type]
        return response

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        response = await super()._chat(request)
        if isinstance(response, web.Response):
            self.sent.append(bytes(response.body))  # type: ignore[arg-type]
            if self.compress == "force":  # gzip whatever the request said
                response.enable_compression(force=web.ContentCoding.gzip)
            elif self.compress:  # gzip (or deflate) when the request accepts it, as api.openai.com does
                response.enable_compression()
        return response

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        response = await super()._responses(request)
        if isinstance(response, web.Response):
            self.sent.append(bytes(response.body))  # type: ignore[arg-type]
        return response

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        response = await super()._messages(request)
        if isinstance(response, web.Response):
            self.sent.append(bytes(response.body))  # type: ignore[arg-type]
        return response

    async def _write_sse(self, request: web.Request, stream: bytes, reply: ScriptedReply) -> web.StreamResponse:
        if self.transform is not None:
            stream = self.transform(stream)
        self.sent.append(stream)
        if self.cutter is not None:
            reply = dataclasses.replace(reply, cuts=list(self.cutter(stream)))
            if self.write_delay_s is not None:
                reply = dataclasses.replace(reply, chunk_delay_s=self.write_delay_s)
        index = len(self.stream_finished)
        self.stream_finished.append(False)
        self.stream_errors.append(None)
        try:
            response = await super()._write_sse(request, stream, reply)
        except BaseException as error:  # ragtap closed the connection while the upstream was still writing
            self.stream_errors[index] = error
            raise
        self.stream_finished[index] = reply.abort_after_bytes is None
        return response


def fixed(reply: ScriptedReply | str) -> Callable[[dict[str, Any]], ScriptedReply]:
    """A script that always gives the same reply."""
    value = ScriptedReply(reply) if isinstance(reply, str) else reply
    return lambda body: value


# --------------------------------------------------------------------------------------------------------------
# The trio: upstream, ragtap, SDK client
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Proxy:
    upstream: RecordingUpstream
    server: RagtapServer
    collector: Collector
    client: openai.AsyncOpenAI
    config: Config
    client_bodies: list[bytes] = field(default_factory=list)  # the exact request bodies the SDK sent

    @property
    def url(self) -> str:
        """ragtap's base URL without /v1 (for raw aiohttp requests)."""
        return f"http://{self.server.host}:{self.server.port}"

    def upstream_body(self, index: int = -1) -> dict[str, Any]:
        return self.upstream.requests[index].body


def _deep_merge(base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    merged = {section: dict(values) for section, values in base.items()}
    for section, values in (extra or {}).items():
        merged.setdefault(section, {}).update(values)
    return merged


class _BodyRecorder:
    """The request hook of the shared HTTP client: appends each request body to the current test's list."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, request) -> None:  # type: ignore[no-untyped-def]
        self.bodies.append(await request.aread())


@pytest.fixture(scope="session")
async def _sdk_http():  # type: ignore[no-untyped-def]
    """One HTTP client for every test's SDK client: building one (its TLS context) costs ~0.2 s."""
    recorder = _BodyRecorder()
    http_client = openai.DefaultAsyncHttpxClient(event_hooks={"request": [recorder]})
    try:
        yield http_client, recorder
    finally:
        await http_client.aclose()


@pytest.fixture
async def start_proxy(embedder, _sdk_http):  # type: ignore[no-untyped-def]
    """`await start_proxy(script, flags={...}, embedder=..., upstream_url=...)` -> Proxy; all stopped after the test."""
    stack = contextlib.AsyncExitStack()
    http_client, recorder = _sdk_http

    async def start(
        script=echo_script,  # type: ignore[no-untyped-def]
        *,
        flags: dict[str, dict[str, Any]] | None = None,
        embedder_override: Any = None,
        upstream_url: str | None = None,
        client_timeout: float = 15.0,
        steps: Any = None,
    ) -> Proxy:
        upstream = await stack.enter_async_context(RecordingUpstream(script))
        # The capture store is on by default; these tests turn it on where they test it (flags={"store": {"path": ...}}).
        base = {"server": {"upstream": upstream_url or upstream.base_url, "host": "127.0.0.1", "port": 0, "shutdown_grace_s": 2.0},
                "store": {"path": ""}}
        config = load_config(flags=_deep_merge(base, flags), environ=ENV)
        collector = Collector()
        server = RagtapServer(config, embedder=embedder_override if embedder_override is not None else embedder, exporters=[collector], steps=steps)
        await stack.enter_async_context(server)
        recorder.bodies = bodies = []
        # The SDK client shares the session's HTTP client, so it is not closed here (closing would close that).
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test-key", max_retries=0, timeout=client_timeout, http_client=http_client)
        return Proxy(upstream, server, collector, client, config, bodies)

    try:
        yield start
    finally:
        await stack.aclose()


# --------------------------------------------------------------------------------------------------------------
# Request helpers
# --------------------------------------------------------------------------------------------------------------

QUESTION = "Will the nitro hypervisor change the apis used to interact with ec2 instances?"
DOCUMENTS = ["no, all the public facing apis for interacting with ec2 instances that run using the nitro hypervisor will remain the same"]
ANSWER = "No, the nitro hypervisor will not change the APIs used to interact with EC2 instances."
SUPPORTING = "In aws service, no, all the public facing apis for interacting with ec2 instances that run using the nitro hypervisor will remain the same."


def rag_messages(question: str = QUESTION, documents: Sequence[str] = DOCUMENTS) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Answer the question from the retrieved documents."},
        {"role": "user", "content": "Documents:\n" + "\n".join(documents) + f"\n\nQuestion: {question}"},
    ]


def explicit(question: str = QUESTION, documents: Sequence[str] = DOCUMENTS) -> dict[str, Any]:
    """`extra_body` that marks a request as RAG explicitly."""
    return {"ragtap": {"question": question, "documents": list(documents)}}


def json_content(answer: str = ANSWER, supporting: str = SUPPORTING, *, ensure_ascii: bool = False) -> str:
    return json.dumps({"answer": answer, "supporting_content": supporting}, ensure_ascii=ensure_ascii)


def sse_payloads(raw: bytes) -> list[bytes]:
    """The `data:` payloads of an SSE byte stream, in order."""
    out = []
    for block in raw.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                out.append(line[5:].strip())
    return out


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(p) for p in sse_payloads(raw) if p != b"[DONE]"]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

