"""What redaction costs (issue 24: every writer redacts, the store is on by default): CPU per captured row on the
store's writer thread, and per scored interaction on the event loop when OpenTelemetry content capture is on.

    .venv/bin/python bench/redaction.py                 # ~20 s
    .venv/bin/python bench/redaction.py --json out.json

For three row sizes (the capture benchmark's realistic row: 3 documents of ~400 characters; a large one: 16
documents of 4,000; the scoring limit: 64 documents of 20,000 characters), it times, in this process, one thread:

- `redact_captured` with the default `[privacy]` patterns (what the store's writer thread does per row before the
  INSERT), against the same call with no patterns and identities in clear (the baseline of the same run: the
  dataclass copies alone);
- the OpenTelemetry content attributes of one interaction (`_content_attributes`, texts cut to `content_max_chars`
  = 4,096) with the default patterns against none: this one runs on the event loop.

Each figure is the median of `--repeats` timings of `--loops` calls.  The texts hold a few e-mail addresses and
phone numbers, as real ones might; everything else is ordinary prose and numbers.  The machine is shared: re-run
on a quiet one and compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtap.config import DEFAULT_THRESHOLDS  # noqa: E402
from ragtap.exporters.otel.evaluation import _content_attributes  # noqa: E402
from ragtap.exporters.settings import OtelSettings  # noqa: E402
from ragtap.privacy import DEFAULT_REDACT, Redactor  # noqa: E402
from ragtap.store.base import CapturedInteraction  # noqa: E402
from ragtap.store.redact import redact_captured  # noqa: E402
from ragtap.types import Assessment, ClaimOutcome, ClaimSupport, Document, Interaction, Scores, Verdict  # noqa: E402

PROSE = ("The nitro hypervisor keeps every public facing API the same; instances launched in 2024 run on 3.5 GHz cores "
         "with 12,500 IOPS. Support answers within 24 hours. ")
PERSONAL = " Write to jane.doe@example.com or call +44 20 7946 0958 for the invoice. "
SIZES = {"realistic (3 x 400 chars)": (3, 400), "large (16 x 4,000)": (16, 4000), "scoring limit (64 x 20,000)": (64, 20000)}


def text(chars: int, seed: int) -> str:
    body = (PROSE * (chars // len(PROSE) + 1))[: max(0, chars - len(PERSONAL))]
    cut = (seed * 97) % max(1, len(body))
    return body[:cut] + PERSONAL + body[cut:]


def row(documents: int, chars: int) -> CapturedInteraction:
    answer = text(300, 1)
    claims = tuple(ClaimSupport("answer", answer[i * 100:(i + 1) * 100], i * 100, (i + 1) * 100, ClaimOutcome.NOT_FOUND,
                                "number_missing", 0.4, 0, 0, 50, 0.5, ("7946", "2024"), ("jane",)) for i in range(3))
    return CapturedInteraction(
        id="bench", time=0.0, question=text(200, 2), documents=tuple(Document(text(chars, 3 + i)) for i in range(documents)),
        supporting=text(300, 4), answer=answer, scores=Scores(sdq=0.7), thresholds=DEFAULT_THRESHOLDS, verdict="parametric",
        poor_retrieval=False, explanation="SDRD fails", claims=claims, user="jane.doe@example.com", session="s-1")


def timed(call: Any, loops: int, repeats: int) -> float:
    """Median seconds per call."""
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(loops):
            call()
        samples.append((time.perf_counter() - began) / loops)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    redactor = Redactor(DEFAULT_REDACT, identity="hashed", salt=b"s" * 64)
    baseline = Redactor()
    otel = OtelSettings(enabled=True, capture_content=True)
    results: dict[str, dict[str, float]] = {}
    print(f"{'row':<30} {'chars':>10} {'store: none':>12} {'store: default':>15} {'ratio':>7} {'ms/100k chars':>14} "
          f"{'otel loop: none':>16} {'otel loop: default':>19}")
    for name, (documents, chars) in SIZES.items():
        item = row(documents, chars)
        interaction = Interaction(question=item.question, documents=item.documents, answer=item.answer, supporting=item.supporting)
        assessment = Assessment(scores=item.scores, passed={}, verdict=Verdict.PARAMETRIC, poor_retrieval=False, explanation="")
        total = len(item.question) + sum(len(d.text) for d in item.documents) + len(item.supporting or "") + len(item.answer or "")
        loops = max(1, 200_000 // total)
        none = timed(lambda: redact_captured(item, baseline), loops, args.repeats)
        default = timed(lambda: redact_captured(item, redactor), loops, args.repeats)
        otel_none = timed(lambda: _content_attributes(otel, interaction, assessment, None, baseline), loops, args.repeats)
        otel_default = timed(lambda: _content_attributes(otel, interaction, assessment, None, redactor), loops, args.repeats)
        results[name] = {"chars": total, "store_none_ms": none * 1e3, "store_default_ms": default * 1e3,
                         "otel_none_ms": otel_none * 1e3, "otel_default_ms": otel_default * 1e3}
        print(f"{name:<30} {total:>10,} {none * 1e3:>10.3f}ms {default * 1e3:>13.3f}ms {default / none:>6.0f}x "
              f"{default * 1e3 / total * 1e5:>14.2f} {otel_none * 1e3:>14.3f}ms {otel_default * 1e3:>17.3f}ms")
        assert "jane.doe@example.com" not in json.dumps(dataclasses.asdict(redact_captured(item, redactor)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
