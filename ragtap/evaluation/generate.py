"""Generation for the experiments, through ragtap's own proxy path.

An in-process `RagtapServer` is pointed at the upstream; every request is sent to it with the official openai
SDK, exactly as an app would send it, with the explicit `ragtap` field (the question and documents) and the
`x-ragtap-debug: 1` header (so the response waits for its scores).  A collecting exporter receives each
assessment together with the split answer and supporting content; requests and assessments are matched by
the W3C `traceparent` header ragtap keeps on the exchange record.

Results are appended to a JSON-lines cache as they arrive: a rerun reads the cache and sends only what is
missing, so a long run that stops (Ctrl-C, rate limit, crash) continues where it stopped.  Failed requests are
not cached, so a rerun retries them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtap.config import Config
from ragtap.exporters.base import Exporter
from ragtap.records import assessment_fields
from ragtap.retry import backoff, retryable
from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

SYSTEM_RAG = "You are a helpful assistant. Answer the user's question using the retrieved documents."
SYSTEM_PLAIN = "You are a helpful assistant. Answer the user's question concisely."


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    key: str  # unique per item and variant; the cache key
    question: str
    documents: tuple[str, ...]  # empty: a plain request without context (sent as not-RAG)
    fields: dict[str, Any] = field(default_factory=dict)  # copied into the record (labels, ids, ...)


@dataclass(frozen=True, slots=True)
class GenerationSettings:
    upstream: str
    model: str
    api_key: str | None = None
    concurrency: int = 8
    retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    timeout_s: float = 120.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    score_wait_s: float = 120.0


class GenerationAborted(RuntimeError):
    """A failure no retry can fix (bad key, unknown model): the run stops."""


class FailedRequest(RuntimeError):
    pass


def prompt_messages(question: str, documents: Sequence[str]) -> list[dict[str, str]]:
    if not documents:
        return [{"role": "system", "content": SYSTEM_PLAIN}, {"role": "user", "content": question}]
    listed = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(documents, 1))
    return [
        {"role": "system", "content": SYSTEM_RAG},
        {"role": "user", "content": f"Retrieved documents:\n\n{listed}\n\nQuestion: {question}"},
    ]


# --------------------------------------------------------------------------------------------- the cache


def read_cache(path: Path) -> dict[str, dict[str, Any]]:
    """key -> record; a torn last line (a crash mid-write) is skipped, the rest is kept."""
    records: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return records
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                records[record["key"]] = record
    return records


# ------------------------------------------------------------------------------------ collecting exporter


class CollectingExporter(Exporter):
    """Hands each scored interaction to whoever waits for its trace id."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[tuple[Interaction, Assessment]]] = {}

    def expect(self, trace_id: str) -> asyncio.Future[tuple[Interaction, Assessment]]:
        future: asyncio.Future[tuple[Interaction, Assessment]] = asyncio.get_running_loop().create_future()
        self._waiting[trace_id] = future
        return future

    def forget(self, trace_id: str) -> None:
        self._waiting.pop(trace_id, None)

    def interaction_scored(self, interaction: Interaction, assessment: Assessment, seconds: float) -> None:
        exchange = interaction.exchange
        traceparent = getattr(exchange, "trace_headers", {}).get("traceparent", "") if exchange is not None else ""
        parts = traceparent.split("-")
        if len(parts) < 3:
            return
        future = self._waiting.pop(parts[1], None)
        if future is not None and not future.done():
            future.set_result((interaction, assessment))


# ------------------------------------------------------------------------------------------------ runner


def experiment_config(config: Config, settings: GenerationSettings) -> Config:
    """The user's config with the listener, exporters and waits an in-process experiment needs."""
    server = dataclasses.replace(
        config.server,
        upstream=settings.upstream,
        host="127.0.0.1",
        port=0,
        debug_wait_s=settings.score_wait_s,
        read_timeout_s=max(config.server.read_timeout_s, settings.timeout_s),
    )
    scoring = dataclasses.replace(config.scoring, enabled=True, queue_size=max(config.scoring.queue_size, 4 * settings.concurrency))
    prometheus = dataclasses.replace(config.prometheus, listen_port=None)
    log = dataclasses.replace(config.log, interactions_path=None)
    return dataclasses.replace(config, server=server, scoring=scoring, prometheus=prometheus, log=log)


def _fatal(error: BaseException) -> bool:
    import openai

    return isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError | openai.NotFoundError)


@dataclass(slots=True)
class GenerationRun:
    records: list[dict[str, Any]]  # one per request that has a result, in request order
    failures: list[tuple[str, str]]  # (key, error) for requests that failed after all retries
    sent: int  # requests sent in this run (cache misses)
    cached: int  # requests answered from the cache


async def _send_one(
    client: Any,
    collector: CollectingExporter,
    request: GenerationRequest,
    settings: GenerationSettings,
) -> dict[str, Any]:
    import openai

    trace_id = secrets.token_hex(16)
    headers = {"x-ragtap-debug": "1", "traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    messages = prompt_messages(request.question, request.documents)
    ragtap_field: dict[str, Any] = (
        {"question": request.question, "documents": list(request.documents)} if request.documents else {"enabled": False}
    )
    extra: dict[str, Any] = {}
    if settings.temperature is not None:
        extra["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        extra["max_tokens"] = settings.max_tokens
    attempt = 0
    while True:
        scored = collector.expect(trace_id) if request.documents else None
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model=settings.model, messages=messages, extra_body={"ragtap": ragtap_field}, extra_headers=headers, **extra
            )
            completion = raw.parse()
            break
        except openai.APIError as error:  # includes connection errors and HTTP statuses
            collector.forget(trace_id)
            if _fatal(error):
                raise GenerationAborted(f"{type(error).__name__}: {getattr(error, 'message', error)}") from error
            if not retryable(error) or attempt >= settings.retries:
                raise FailedRequest(f"{type(error).__name__}: {getattr(error, 'message', error)}") from error
            await asyncio.sleep(backoff(attempt, settings.backoff_s, settings.max_backoff_s, error))
            attempt += 1
            trace_id = secrets.token_hex(16)
            headers["traceparent"] = f"00-{trace_id}-{secrets.token_hex(8)}-01"

    choice = completion.choices[0] if completion.choices else None
    answer = choice.message.content if choice is not None and choice.message is not None else None
    record: dict[str, Any] = {
        "key": request.key,
        **request.fields,
        "question": request.question,
        "documents": list(request.documents),
        "answer": answer,
        "supporting": None,
        "model": completion.model,
        "finish_reason": choice.finish_reason if choice is not None else None,
        "attempts": attempt + 1,
    }
    if scored is not None:
        await _add_assessment(record, scored, raw.headers, collector, trace_id, settings.score_wait_s)
    return record


async def _add_assessment(record: dict[str, Any], scored: Any, headers: Any, collector: CollectingExporter, trace_id: str, wait_s: float) -> None:
    """The proxy's assessment of this request (its exporter hands it over by trace id), or, when scoring does not
    finish within `wait_s`, what the debug headers said."""
    try:
        interaction, assessment = await asyncio.wait_for(scored, wait_s)
    except asyncio.TimeoutError:
        collector.forget(trace_id)
        record["verdict"] = headers.get("x-ragtap-verdict", "unscored")
        try:
            record["scores"] = json.loads(headers.get("x-ragtap-scores", "{}"))
        except json.JSONDecodeError:
            record["scores"] = {}
        record["unscored_reason"] = headers.get("x-ragtap-unscored-reason", "scoring_timeout")
        return
    record["supporting"] = interaction.supporting
    if interaction.unscored_reason:
        record["unscored_reason"] = interaction.unscored_reason
    record.update(assessment_fields(assessment))


async def generate(
    requests: Sequence[GenerationRequest],
    settings: GenerationSettings,
    config: Config,
    embedder: Embedder,
    cache_path: Path,
    *,
    desc: str = "generating",
    quiet: bool = False,
) -> GenerationRun:
    import openai
    from tqdm import tqdm

    from ragtap.proxy.server import RagtapServer

    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise ValueError("generation keys must be unique")
    cache = read_cache(cache_path)
    pending = [r for r in requests if r.key not in cache]
    failures: list[tuple[str, str]] = []
    if pending:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        collector = CollectingExporter()
        server = RagtapServer(experiment_config(config, settings), embedder=embedder, exporters=[collector])
        await server.start()
        # a debug response waits for its scores too, so the client's timeout covers both
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key=settings.api_key or "ragtap-no-key", max_retries=0, timeout=settings.timeout_s + settings.score_wait_s
        )
        semaphore = asyncio.Semaphore(max(1, settings.concurrency))
        bar = tqdm(total=len(requests), initial=len(requests) - len(pending), desc=desc, unit="req", file=sys.stderr, disable=quiet)
        try:
            with open(cache_path, "a", encoding="utf-8") as out:

                async def one(request: GenerationRequest) -> None:
                    async with semaphore:
                        try:
                            record = await _send_one(client, collector, request, settings)
                        except FailedRequest as error:
                            failures.append((request.key, str(error)))
                            bar.update(1)
                            return
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    out.flush()
                    cache[request.key] = record
                    bar.update(1)

                tasks = [asyncio.create_task(one(r)) for r in pending]
                try:
                    await asyncio.gather(*tasks)
                except BaseException:
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
        finally:
            bar.close()
            await client.close()
            await server.stop()
    records = [{**cache[r.key], **r.fields} for r in requests if r.key in cache]
    return GenerationRun(records, failures, sent=len(pending), cached=len(requests) - len(pending))
