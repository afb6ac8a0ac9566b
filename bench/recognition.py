"""Recognition cost per request body: `recognise()` on the bench bodies (bench/bodies.py), a short plain chat and
one body per layout of the labelled corpora (generated and independent, with the real frameworks' captured
requests), with `orjson.loads` of the same body as the baseline measured in the same run (parsing is a cost every
request pays anyway).  Best of 5 repeats of timeit, microseconds per call.

    .venv/bin/python bench/recognition.py
    .venv/bin/python bench/recognition.py --baseline /tmp/main17   # also another tree's recogniser, interleaved

`--baseline DIR`: DIR holds another checkout's `ragtap/` (e.g. `git archive main ragtap | tar -x -C DIR`); its
`ragtap/recognise` is imported under another name and timed body by body, alternating with this tree's, so both
columns see the same machine load (the shared machine's load swings more than the differences measured).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def interleaved_us(fns: list[Callable[[], Any]], number: int = 2000, repeat: int = 5) -> list[float]:
    """Best per-call time of each function, timed in alternation (one round = each function once)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def baseline_recognise(tree: Path) -> Callable[[Any], Any]:
    """`recognise` of the `ragtap/` under `tree`, imported as the package `ragtap_baseline` (the recogniser only
    needs ragtap/__init__.py, types.py and recognise/; their `ragtap.` imports are renamed)."""
    work = Path(tempfile.mkdtemp(prefix="ragtap-baseline-"))
    package = work / "ragtap_baseline"
    shutil.copytree(tree / "ragtap" / "recognise", package / "recognise")
    for name in ("__init__.py", "types.py"):
        shutil.copy(tree / "ragtap" / name, package / name)
    for path in package.rglob("*.py"):
        text = path.read_text()
        text = text.replace("from ragtap.", "from ragtap_baseline.").replace("from ragtap import", "from ragtap_baseline import")
        path.write_text(text)
    sys.path.insert(0, str(work))
    return importlib.import_module("ragtap_baseline.recognise").recognise


def main() -> None:
    baseline = None
    if "--baseline" in sys.argv:
        baseline = baseline_recognise(Path(sys.argv[sys.argv.index("--baseline") + 1]))
    cases: list[tuple[str, bytes]] = [
        ("bench rag_body (langchain, 1.5 KB)", rag_body()),
        ("bench chat_body (plain, 1.5 KB)", chat_body()),
        ("plain chat 'What is 2+2?'", orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]})),
    ]
    seen: set[tuple[str, bool]] = set()
    for label, layout, body in [*corpus(), *independent_corpus()]:
        if (layout, label) not in seen:  # a captured agent run: its first non-RAG and its first RAG call
            seen.add((layout, label))
            name = f"{layout} ({'rag' if label else 'not rag'})" if layout.startswith("captured:") else layout
            cases.append((name, orjson.dumps(body)))
    if baseline is None:
        print(f"{'body':<40} {'bytes':>6} {'reason':<26} {'recognise us':>12} {'loads us':>9} {'ratio':>6}")
    else:
        print(f"{'body':<48} {'bytes':>6} {'baseline reason':<24} {'us':>7} {'reason':<24} {'us':>7} "
              f"{'loads us':>8} {'ratio':>6}")
    for name, raw in cases:
        body = orjson.loads(raw)
        reason = recognise(body).reason
        if baseline is None:
            rec = per_call_us(lambda body=body: recognise(body))
            base = per_call_us(lambda raw=raw: orjson.loads(raw))
            print(f"{name:<40} {len(raw):>6} {reason:<26} {rec:>12.2f} {base:>9.2f} {rec / base:>6.2f}")
            continue
        before, after, loads = interleaved_us([lambda body=body: baseline(body), lambda body=body: recognise(body),
                                               lambda raw=raw: orjson.loads(raw)])
        print(f"{name:<48} {len(raw):>6} {baseline(body).reason:<24} {before:>7.2f} {reason:<24} {after:>7.2f} "
              f"{loads:>8.2f} {after / loads:>6.1f}")


if __name__ == "__main__":
    main()
