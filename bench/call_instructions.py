"""Instructions per call of the request path's pieces, counted by callgrind: each piece alone, exact to a few
instructions, on a busy or a quiet machine.

    .venv/bin/python bench/call_instructions.py [--baseline-src /path/to/other/checkout] [--pieces recognise_chat,...]

`bench/request_instructions.py` counts whole requests, which move by +-1-3% from run to run (time-driven work: the
watchdog's sweep, the collector, scoring's batches); a cut of 5,000 instructions is lost in that.  Here each piece
runs N and then 2N times in a fresh `python` under `valgrind --tool=callgrind` (after one run that writes the
bytecode caches), and the difference of the two totals divided by N is its count per call (interpreter start-up,
imports and set-up cancel out).  The inputs are the benchmark's bodies (bench/bodies.py) and a typical request's
and reply's headers.  ~20 s per piece and checkout.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent

_COMMON = """
import os, sys, tempfile
sys.path.insert(0, {bench!r})
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp()
import bodies
from multidict import CIMultiDict, CIMultiDictProxy
chat = bodies.chat_body(numbered=True).replace(b"{{n}}", b"1234")
rag = bodies.rag_body(numbered=True).replace(b"{{n}}", b"1234")
request_headers_in = CIMultiDictProxy(CIMultiDict({{"Host": "127.0.0.1:8787", "Accept-Encoding": "identity", "Content-Length": "1500",
    "Content-Type": "application/json", "Authorization": "Bearer sk-bench", "User-Agent": "Python-urllib/3.11"}}))
reply_headers_in = CIMultiDictProxy(CIMultiDict({{"Content-Type": "application/json", "Content-Length": "300",
    "Date": "Thu, 26 Nov 2026 14:00:00 GMT", "Server": "Python/3.11 aiohttp/3.14.5"}}))
"""

# name -> (set-up, the call counted)
PIECES: dict[str, tuple[str, str]] = {
    "parse_object": ("from ragtap.proxy.json_bodies import parse_object", "parse_object(chat)"),
    "recognise_chat": ("from ragtap.proxy.json_bodies import parse_object\nfrom ragtap.recognise import recognise\nbody = parse_object(chat)",
                       "recognise(body, ())"),
    "recognise_rag": ("from ragtap.proxy.json_bodies import parse_object\nfrom ragtap.recognise import recognise\nbody = parse_object(rag)",
                      "recognise(body, ())"),
    "recognise_chat_colon": (
        "from ragtap.proxy.json_bodies import parse_object\nfrom ragtap.recognise import recognise\nbody = parse_object(chat)\n"
        "body['messages'][1]['content'] += ' We land at 10:30.'", "recognise(body, ())"),
    "exchange_record": ("from ragtap.exchange import ExchangeRecord",
                        "ExchangeRecord(route='/v1/chat/completions', trace_headers={h: request_headers_in[h] for h in "
                        "('traceparent', 'tracestate', 'baggage') if h in request_headers_in}, upstream_host='127.0.0.1', upstream_port=9000)"),
    "note_request": ("from ragtap.exchange import ExchangeRecord, note_request\nfrom ragtap.proxy.json_bodies import parse_object\n"
                     "body = parse_object(chat)\nrecord = ExchangeRecord(route='/v1/chat/completions')",
                     "note_request(record, body, request_headers_in, ('x-ragtap-user',), ('x-ragtap-session',), keep_messages=False)"),
    "headers": ("from ragtap.proxy.upstream import request_headers, response_headers",
                "request_headers(request_headers_in, identity_encoding=False); response_headers(reply_headers_in, body_rewritten=False)"),
    "exchange_hooks": (
        "from ragtap.config import WorkerRole, load_config\nfrom ragtap.wiring import build_exporters\n"
        "from ragtap.exporters.base import ExporterSet\nfrom ragtap.exchange import ExchangeRecord\n"
        "hooks = ExporterSet(build_exporters(load_config(flags={'server': {'upstream': 'http://127.0.0.1:9/v1'}}), WorkerRole()).exporters)\n"
        "record = ExchangeRecord(route='/v1/chat/completions', status=200, recognition='no_context', request_model='gpt-4o-mini',\n"
        "    upstream_sent_at=1.0, upstream_done_at=1.1, finished_at=1.2, input_tokens=300, output_tokens=40)",
        "hooks.exchange_started(record); hooks.exchange_finished(record)"),
    "count_supporting_tokens": (
        "from ragtap.tokens import count_tokens\ntext = bodies.DOCUMENTS[0][:120]\ncount_tokens(text, 'gpt-4o-mini')",
        "count_tokens(text, 'gpt-4o-mini')"),
    # The RAG request's own pieces (issue 23, fifth round): injection, the reply's parse/split/re-serialisation, the
    # hooks of an injected exchange whose interaction the full queue drops, its record alone, the supporting tokens.
    "rag_inject": ("from ragtap.proxy.json_bodies import parse_object\nfrom ragtap.proxy.inject import inject\nfrom ragtap.proxy.exchange_path import request_bytes\n"
                   "from ragtap.config import load_config\ncfg = load_config(flags={'server': {'upstream': 'http://127.0.0.1:9/v1'}})\nbody = parse_object(rag)",
                   "request_bytes(inject(body, cfg.inject)[0])"),
    "rag_reply": ("import upstream as up\nfrom ragtap.proxy.json_bodies import parse_object, dumps\nfrom ragtap.split.reply import split_reply\nfrom ragtap.proxy.chat import _first_message\n"
                  "data = up.completion_bytes(True)\n"
                  "def f():\n    c = parse_object(data, lenient=True); m = _first_message(c); s = split_reply(m['content'], truncated=False); m['content'] = s.answer; return dumps(c)",
                  "f()"),
    "rag_hooks": (
        "from ragtap.config import WorkerRole, load_config\nfrom ragtap.wiring import build_exporters\n"
        "from ragtap.exporters.base import ExporterSet\nfrom ragtap.exchange import ExchangeRecord\nfrom ragtap.cost import settle_overhead, PriceTable\n"
        "cfg = load_config(flags={'server': {'upstream': 'http://127.0.0.1:9/v1'}})\nprices = PriceTable(cfg.cost)\n"
        "hooks = ExporterSet(build_exporters(cfg, WorkerRole()).exporters)\n"
        "def f():\n    record = ExchangeRecord(route='/v1/chat/completions', status=200, recognition='langchain', rag_source='implicit', injected=True, injected_instruction='x'*600, request_model='gpt-4o-mini', response_model='gpt-4o-mini-2024-07-18',\n"
        "        upstream_sent_at=1.0, upstream_done_at=1.1, finished_at=1.2, input_tokens=300, output_tokens=40, supporting_tokens=23)\n"
        "    hooks.exchange_started(record); settle_overhead(record, prices); hooks.exchange_finished(record); hooks.scoring_dropped('queue_full')",
        "f()"),
    "rag_record_only": ("from ragtap.exchange import ExchangeRecord\n"
        "def f():\n    record = ExchangeRecord(route='/v1/chat/completions', status=200, recognition='langchain', rag_source='implicit', injected=True, injected_instruction='x'*600, request_model='gpt-4o-mini', response_model='gpt-4o-mini-2024-07-18',\n"
        "        upstream_sent_at=1.0, upstream_done_at=1.1, finished_at=1.2, input_tokens=300, output_tokens=40, supporting_tokens=23)",
        "f()"),
    "count_support": ("import upstream as up\nfrom ragtap.tokens import count_tokens\ncount_tokens(up.SUPPORT, 'gpt-4o-mini')", "count_tokens(up.SUPPORT, 'gpt-4o-mini')"),
}


def count(source: Path, piece: str, calls: int, workdir: Path) -> int:
    """Instructions of one run of `calls` calls (the whole process)."""
    setup, step = PIECES[piece]
    script = workdir / f"{piece}.py"
    script.write_text(_COMMON.format(bench=str(BENCH)) + setup + f"\nfor _ in range({calls}):\n    {step}\n")
    out = workdir / "callgrind.out"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")}, "PYTHONPATH": str(source), "PYTHONHASHSEED": "0"}
    run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, str(script)],
                         cwd=source, env=env, capture_output=True, text=True, timeout=600)
    for leftover in workdir.glob("callgrind.out*"):
        leftover.unlink()
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise RuntimeError(f"{piece} in {source}: {run.stderr[-800:]}")
    return int(found.group(1))


def per_call(source: Path, piece: str, calls: int, workdir: Path) -> float:
    count(source, piece, 1, workdir)  # bytecode caches written: the two counted runs import alike
    return (count(source, piece, 2 * calls, workdir) - count(source, piece, calls, workdir)) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, help="another checkout, counted beside this one")
    parser.add_argument("--pieces", default=",".join(PIECES), help=f"comma-separated, of: {', '.join(PIECES)}")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    sources = {"this": BENCH.parent}
    if args.baseline_src is not None:
        sources["baseline"] = args.baseline_src.resolve()
    workdir = Path(tempfile.mkdtemp(prefix="ragtap-bench-calls-"))
    print(f"instructions per call (callgrind, {args.calls} calls: 2N - N)")
    print(f"{'piece':<26}" + "".join(f"{label:>14}" for label in sources) + ("   this / baseline" if len(sources) > 1 else ""))
    for piece in args.pieces.split(","):
        counts = [per_call(source, piece, args.calls, workdir) for source in sources.values()]
        ratio = f"   {counts[0] / counts[1]:.3f}x" if len(counts) > 1 and counts[1] else ""
        print(f"{piece:<26}" + "".join(f"{c:>14,.0f}" for c in counts) + ratio, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
