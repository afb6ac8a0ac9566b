"""Recognition cost per request body: `recognise()` on the bench bodies (bench/bodies.py), a short plain chat and
one body per layout of the labelled corpora (generated and independent, with the real frameworks' captured
requests), with `orjson.loads` of the same body as the baseline measured in the same run (parsing is a cost every
request pays anyway).  Best of 5 repeats of timeit, microseconds per call.

    .venv/bin/python bench/recognition.py
"""

from __future__ import annotations

import os
import sys
import timeit
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
# This checkout's ragtap, not whichever one the venv has installed (a shared venv may hold another tree's); an
# explicit PYTHONPATH wins (to measure another tree's ragtap with these bodies, e.g. before/after a change).
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bodies import chat_body, rag_body  # noqa: E402
from recognition_corpus import corpus  # noqa: E402
from recognition_corpus_independent import corpus as independent_corpus  # noqa: E402

from ragtap.recognise import recognise  # noqa: E402


def per_call_us(fn, number: int = 2000) -> float:  # type: ignore[no-untyped-def]
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    cases: list[tuple[str, bytes]] = [
        ("bench rag_body (langchain, 1.5 KB)", rag_body()),
        ("bench chat_body (plain, 1.5 KB)", chat_body()),
        ("plain chat 'What is 2+2?'", orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]})),
    ]
    seen: set[str] = set()
    for _label, layout, body in [*corpus(), *independent_corpus()]:
        if layout not in seen:
            seen.add(layout)
            cases.append((layout, orjson.dumps(body)))
    print(f"{'body':<40} {'bytes':>6} {'reason':<26} {'recognise us':>12} {'loads us':>9} {'ratio':>6}")
    for name, raw in cases:
        body = orjson.loads(raw)
        reason = recognise(body).reason
        rec = per_call_us(lambda body=body: recognise(body))
        base = per_call_us(lambda raw=raw: orjson.loads(raw))
        print(f"{name:<40} {len(raw):>6} {reason:<26} {rec:>12.2f} {base:>9.2f} {rec / base:>6.2f}")


if __name__ == "__main__":
    main()
