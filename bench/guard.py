"""What the guard (docs/guard.md) adds to a RAG request, per action, against `off` in the same run.

    .venv/bin/python bench/guard.py                  # 3 repeats x 100 requests per block, ~6 min
    .venv/bin/python bench/guard.py --quick          # 2 repeats x 40 requests
    .venv/bin/python bench/guard.py --token-ms 20 --streams-only --repeats 1 --count 20   # a model writing: 20 ms a word

Layout (2 cores, as bench/run.py): the scripted upstream (bench/guard_upstream.py: three sentences from the
documents, or the same with one invented sentence) and this client on core 0, `ragtap serve` (default config:
scoring on, MiniLM int8, the guard off unless a request asks) alone on core 1.  For each API (chat completions,
Responses), streamed or not, and each answer (faithful, invented), one block of sequential requests per action
(`x-ragtap-guard: off | annotate | strip | block | retry`), back to back, the scoring queue drained after each.
Per block: p50 and p99 of the time to the end of the response and, streamed, of the time to the first answer text.
Per repeat the difference action - off is taken; the figures are medians over the repeats.  Before measuring,
one request per case checks what the app receives (stripped, blocked, retried, unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bodies  # noqa: E402
from guard_upstream import FAITHFUL, INVENTED, INVENTED_SENTENCE  # noqa: E402
from responses import _block, wait_for_scoring  # noqa: E402
from run import BENCH_KEY, LOAD_CPU, Service, free_port, log, ragtap_service, run_async  # noqa: E402

ACTIONS = ("off", "annotate", "strip", "block", "retry")
BLOCK_MESSAGE = "I can't give a reliable answer to this from the documents I have."  # the start of ragtap's default


def body(api: str, stream: bool) -> bytes:
    prompt = bodies.rag_prompt(bodies.NUMBERED_QUESTION, bodies.DOCUMENTS)
    turns = [{"role": "user", "content": prompt}]
    return json.dumps({"model": bodies.MODEL, "messages" if api == "chat" else "input": turns, "temperature": 0.0, "stream": stream}).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def expected(action: str, answer: str, stream: bool) -> str:
    """What the app should receive (the check before measuring)."""
    if answer == "faithful" or action in ("off", "annotate"):
        return FAITHFUL if answer == "faithful" else INVENTED
    if action == "block":
        return f"{FAITHFUL.split('. ')[0]}.\n\n" if stream else ""  # (+ the block message, checked by prefix)
    return FAITHFUL


async def check(base: str, api: str, stream: bool, answer: str, action: str, token_ms: int) -> None:
    import openai

    headers = {"x-ragtap-guard": action, "x-bench-answer": answer, "x-bench-token-ms": str(token_ms)}
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key=BENCH_KEY, max_retries=0, timeout=30)
    prompt = bodies.rag_prompt(bodies.QUESTION, bodies.DOCUMENTS)
    try:
        if api == "chat" and stream:
            text = "".join([c.choices[0].delta.content or "" async for c in await client.chat.completions.create(
                model=bodies.MODEL, messages=[{"role": "user", "content": prompt}], stream=True, extra_headers=headers) if c.choices])
        elif api == "chat":
            text = (await client.chat.completions.create(model=bodies.MODEL, messages=[{"role": "user", "content": prompt}],
                                                         extra_headers=headers)).choices[0].message.content or ""
        elif stream:
            text = "".join([e.delta async for e in await client.responses.create(model=bodies.MODEL, input=prompt, stream=True,
                                                                                   extra_headers=headers) if e.type == "response.output_text.delta"])
        else:
            text = (await client.responses.create(model=bodies.MODEL, input=prompt, extra_headers=headers)).output_text
    finally:
        await client.close()
    want = expected(action, answer, stream)
    ok = text.startswith(want + BLOCK_MESSAGE[:20]) if action == "block" and answer == "invented" else text == want
    if not ok or (answer == "invented" and action in ("strip", "block", "retry") and INVENTED_SENTENCE in text):
        raise RuntimeError(f"{api} stream={stream} {answer} {action}: unexpected text {text[:300]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--token-ms", type=int, default=0, help="the upstream's pause between stream events (default 0)")
    parser.add_argument("--apis", default="chat,responses")
    parser.add_argument("--streams-only", action="store_true",
                        help="only the streamed cases (with --token-ms: the non-streamed ones wait as long)")
    parser.add_argument("--repeats", type=int, help="override the repeats")
    parser.add_argument("--count", type=int, help="override the requests per block")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON summary here")
    args = parser.parse_args()
    repeats, count = (2, 40) if args.quick else (3, 100)
    repeats, count = args.repeats or repeats, args.count or count
    os.sched_setaffinity(0, {LOAD_CPU})
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-guard-"))
    port = free_port()
    command = [sys.executable, str(BENCH / "guard_upstream.py"), "--port", str(port)]
    upstream = Service("guard-upstream", command, port, "/v1/models", cpu=LOAD_CPU)
    streams = (True,) if args.streams_only else (False, True)
    cases = [(api, stream, answer) for api in args.apis.split(",") for stream in streams for answer in ("faithful", "invented")]
    rows: dict[str, list[dict[str, float]]] = {}
    load_start = os.getloadavg()[0]
    ragtap = None
    try:
        upstream.start(workdir)
        ragtap = ragtap_service("ragtap", upstream, workdir, scoring=True).start(workdir)
        for api, stream, answer in cases:
            for action in ACTIONS:
                run_async(check(ragtap.url, api, stream, answer, action, args.token_ms))
        for repeat in range(repeats):
            log(f"repeat {repeat + 1}/{repeats}")
            for api, stream, answer in cases:
                path = "/v1/chat/completions" if api == "chat" else "/v1/responses"
                per_action = {}
                for action in ACTIONS:
                    headers = {"x-ragtap-guard": action, "x-bench-answer": answer, "x-bench-token-ms": str(args.token_ms)}
                    timings = run_async(_block(ragtap.url + path, body(api, stream), count, stream, headers))
                    if not wait_for_scoring(ragtap.url):
                        log(f"  warning: the scoring queue did not drain after {api} {stream} {answer} {action}")
                    total = [t[1] * 1e3 for t in timings]
                    first = [t[0] * 1e3 for t in timings]
                    per_action[action] = {"p50_ms": statistics.median(total), "p99_ms": percentile(total, 0.99)}
                    if stream:
                        per_action[action].update(first_p50_ms=statistics.median(first), first_p99_ms=percentile(first, 0.99))
                for action, row in per_action.items():
                    row.update({f"added_{k}": v - per_action["off"][k] for k, v in list(row.items())})
                    rows.setdefault(f"{api}|{'stream' if stream else 'json'}|{answer}|{action}", []).append(row)
    finally:
        if ragtap is not None:
            ragtap.stop()
        upstream.stop()
    summary: dict[str, Any] = {name: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for name, rs in rows.items()}
    summary["_plan"] = {"repeats": repeats, "requests_per_block": count, "token_ms": args.token_ms, "cpus": os.cpu_count(),
                        "load_average_start": load_start, "load_average_end": os.getloadavg()[0]}
    print(json.dumps(summary, indent=2))
    print("\n| API | answer | action | p50 ms | added p50 | p99 ms | added p99 | first text p50 | added | first text p99 | added |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in summary.items():
        if name.startswith("_"):
            continue
        api, kind, answer, action = name.split("|")
        first = [f"{row[k]:.2f}" if k in row else "" for k in ("first_p50_ms", "added_first_p50_ms", "first_p99_ms", "added_first_p99_ms")]
        print(f"| {api} {kind} | {answer} | {action} | {row['p50_ms']:.2f} | {row['added_p50_ms']:+.2f} | {row['p99_ms']:.2f} | "
              f"{row['added_p99_ms']:+.2f} | " + " | ".join(first) + " |")
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
