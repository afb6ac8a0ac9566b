"""`ragtap recognise FILE.jsonl`: what ragtap would do with each logged chat request body, and why.

Each line is a chat-completions (or Responses API: `input`, no `messages`) request body (a JSON object), or an object holding one under `body` or
`request` (a capture log).  One JSON line per input line goes to stdout (or --out): the line number, the reason
(the rule that matched, the client setting that forbids injection, or why it is not RAG), whether ragtap would
inject its instruction, the question and the number of documents; a count per reason goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Any

import orjson

from ragtap.commands.common import CommandError
from ragtap.config import load_config
from ragtap.recognise import recognise, recognise_responses

QUESTION_CHARS = 200  # the question is echoed for orientation, not in full


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("recognise", help="explain what ragtap would do with logged chat request bodies")
    p.add_argument("file", help="JSONL: one chat-completions request body per line (or an object with `body`/`request`)")
    p.add_argument("--out", help="write the explanations here (default: stdout)")
    p.add_argument("--config", help="config.toml (its [[recognise.patterns]] are applied)")
    p.set_defaults(func=run)


def explain(line_no: int, raw: bytes, patterns: Any) -> dict[str, Any]:
    """The explanation of one line; a line that is not JSON is reported as `bad_body`, never raised."""
    try:
        body: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"line": line_no, "reason": "bad_body", "rag": False, "inject": False, "detail": "not JSON"}
    if isinstance(body, dict) and "messages" not in body and "input" not in body:
        inner = body.get("body", body.get("request"))
        if isinstance(inner, dict):
            body = inner
    # A Responses API body (`input`, no `messages`) is read by the Responses adapter.
    responses_api = isinstance(body, dict) and "input" in body and "messages" not in body
    found = recognise_responses(body, patterns) if responses_api else recognise(body, patterns)
    out: dict[str, Any] = {"line": line_no, "reason": found.reason, "rag": found.context is not None,
                           "inject": found.inject}
    if found.context is not None:
        out["rule"] = found.context.source
        out["question"] = found.context.question[:QUESTION_CHARS]
        out["documents"] = len(found.context.documents)
    return out


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    patterns = load_config(args.config).recognise.patterns if args.config else ()
    counts: Counter[str] = Counter()
    sink: IO[bytes] = open(args.out, "wb") if args.out else sys.stdout.buffer  # noqa: SIM115 - closed below
    try:
        with path.open("rb") as lines:
            for line_no, raw in enumerate(lines, 1):
                if not raw.strip():
                    continue
                explanation = explain(line_no, raw, patterns)
                counts[explanation["reason"]] += 1
                sink.write(orjson.dumps(explanation) + b"\n")
    finally:
        if args.out:
            sink.close()
        else:
            sink.flush()
    total = sum(counts.values())
    print(f"{total} request bodies:", file=sys.stderr)
    for reason, count in counts.most_common():
        print(f"  {reason:<24} {count:>7}  {count / max(total, 1):6.1%}", file=sys.stderr)
    return 0
