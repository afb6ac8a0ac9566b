"""`ragtap judge FILE.jsonl [--out OUT.jsonl]`: the Ragas metrics (faithfulness, answer relevance, context
relevance) by an LLM judge, offline, over the interaction format of `ragtap score`.  See docs/judge.md."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import IO, Any

from ragtap.commands.common import output_file, read_interaction_file
from ragtap.config import load_config
from ragtap.judge.settings import add_endpoint_arguments, with_arguments


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "judge",
        help="LLM-judged Ragas metrics (faithfulness, answer relevance, context relevance) over a JSONL file",
        description="Judge a JSONL file of interactions (the format of `ragtap score`; the documents, joined, are "
        "the context) with an OpenAI-compatible judge endpoint.  Resumable: finished rows are kept in a cache file "
        "and skipped on a rerun.",
    )
    p.add_argument("file", help="JSONL: question, documents (or retrieved), answer, id")
    p.add_argument("--out", help="write one line per interaction, with a `judge` object, here (default: stdout)")
    p.add_argument("--config", help="config.toml ([judge] endpoint and limits, [scoring] embedder)")
    add_endpoint_arguments(p)
    p.add_argument("--metrics", help="comma-separated subset of faithfulness,answer_relevance,context_relevance")
    p.add_argument("--retries", type=int, help="retries per call on 429/5xx/connection errors (default 4)")
    p.add_argument("--no-json-mode", action="store_true", help="do not send response_format json_object")
    p.add_argument("--cache", help="resumable cache file (default: OUT.judge-cache.jsonl, or FILE.judge-cache.jsonl)")
    p.add_argument("--no-cache", action="store_true", help="judge every row, keep nothing")
    p.add_argument("--limit", type=int, help="judge only the first N rows")
    p.add_argument("--price-prompt", type=float, help="USD per 1M prompt tokens, for the cost line")
    p.add_argument("--price-completion", type=float, help="USD per 1M completion tokens, for the cost line")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)




def default_cache_path(args: argparse.Namespace) -> Path:
    return Path(f"{args.out or args.file}.judge-cache.jsonl")


def run(args: argparse.Namespace) -> int:
    from ragtap.judge.cache import JudgeCache
    from ragtap.judge.client import JudgeClient
    from ragtap.judge.offline import judge_interactions
    from ragtap.judge.ragas import ANSWER_RELEVANCE, METRIC_NAMES, Judge

    config = load_config(args.config)
    interactions = read_interaction_file(args.file)
    if args.limit is not None:
        interactions = interactions[: max(0, args.limit)]
    settings = with_arguments(config.judge, args)
    unknown = set(settings.metrics) - set(METRIC_NAMES)
    if unknown or not settings.metrics:
        print(f"ragtap: --metrics takes a subset of {','.join(METRIC_NAMES)}", file=sys.stderr)
        return 2
    embedder = None
    if ANSWER_RELEVANCE in settings.metrics:
        from ragtap.wiring import build_embedder

        embedder = build_embedder(config)
    cache = None if args.no_cache else JudgeCache(args.cache or default_cache_path(args))
    out: IO[bytes] = output_file(args.out) if args.out else sys.stdout.buffer
    progress = None
    if not args.quiet:
        from tqdm import tqdm

        progress = tqdm(total=len(interactions), unit="row", file=sys.stderr, desc="judge")

    async def main() -> Any:
        client = JudgeClient(settings.endpoint(config.server.upstream))
        judge = Judge(client, embedder, questions=max(1, settings.questions), metrics=settings.metrics)
        try:
            return await judge_interactions(
                interactions, judge, out, cache=cache, workers=max(1, settings.concurrency),
                on_row=(lambda: progress.update(1)) if progress is not None else None,
            )
        finally:
            await client.close()

    try:
        report = asyncio.run(main())
    finally:
        if progress is not None:
            progress.close()
        if cache is not None:
            cache.close()
        if args.out:
            out.close()
        else:
            out.flush()
    print(report.summary(args.price_prompt, args.price_completion), file=sys.stderr)
    if cache is not None:
        print(f"cache: {cache.path} ({len(cache)} judgements)", file=sys.stderr)
    return 1 if report.transport_errors else 0
