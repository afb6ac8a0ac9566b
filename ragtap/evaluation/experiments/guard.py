"""`ragtap experiment guard`: how often each guard action would alter a *faithful* answer, and catch a hallucinated one.

Before turning the guard on, a team needs the price in false alarms: the share of answers that were right and
that the guard would strip, block or retry anyway.  This measures it with today's verdicts on labelled data:
DelucionQA dev (real ChatGPT answers, labelled per sentence), RAGTruth summary (real answers of six LLMs, with
hallucination spans) and WikiEval (a grounded and an ungrounded answer per question), each answer scored by
ragtap's own path (`assess_batch`, the proxy's core) and then put through the guard's own decision code:

- whole replies (`ragtap.guard.decision.deliver`): `block` and `retry` act on every answer whose verdict trips
  the guard (`[guard] verdicts`; retry then asks the upstream again, which this offline run cannot do);
  `strip` alters an answer when it has an unsupported sentence to remove (a tripped verdict with none to name
  is left unchanged: "unlocated");
- streams (`claim_trips`, the sentence-level check): an answer is altered when one of its sentences trips the
  check (strip removes it, block cuts the answer there);
- annotate never alters the text.

The answers were written without ragtap's instruction, so there is no supporting content: the verdict follows the
rules without support (claims against the documents), which is also what the stream's sentence check does.  Re-run
it after the verdict changes; the command and its output are in docs/guard.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtap.evaluation.datasets import DatasetError, dataset_file, load_wikieval, resolve_data_dir
from ragtap.evaluation.report import save_report
from ragtap.guard.decision import BLOCKED, STRIPPED, claim_trips, deliver, trigger_of
from ragtap.guard.settings import GuardSettings
from ragtap.types import Assessment, Document, Interaction

DATASETS: dict[str, str] = {
    "delucionqa_dev": "delucionqa/dev.jsonl",
    "ragtruth_summary": "ragtruth_summary/ragtruth_summary.jsonl",
    "wikieval": "wikieval/wikieval.jsonl",
}
ACTIONS = ("strip", "block", "retry", "stream_strip", "stream_block", "annotate")


@dataclass(frozen=True, slots=True)
class Labelled:
    interaction: Interaction
    faithful: bool


def load_labelled(name: str, path: Path) -> list[Labelled]:
    """A dataset as answers labelled faithful or not (WikiEval: the grounded and the ungrounded answer of each row)."""
    if name == "wikieval":
        rows = []
        for row in load_wikieval(path):
            documents = tuple(Document(p) for p in row.contexts)
            rows.append(Labelled(Interaction(row.question, documents, row.answer, id=f"{row.row}-grounded"), True))
            rows.append(Labelled(Interaction(row.question, documents, row.ungrounded_answer, id=f"{row.row}-ungrounded"), False))
        return rows
    from ragtap.evaluation.experiments.delucionqa import load_split

    return [Labelled(r.interaction, not r.hallucinated) for r in load_split(path)]


def actions_taken(answer: str, assessment: Assessment, settings: GuardSettings) -> dict[str, bool]:
    """Which actions would change what the app receives for this answer."""
    tripped = trigger_of(assessment, settings.verdicts) is not None
    strip = deliver("strip", answer, assessment, settings).outcome in (STRIPPED, BLOCKED)
    sentence = any(claim_trips(c, settings.verdicts) for c in assessment.claims if c.of == "answer")
    return {"strip": strip, "block": tripped, "retry": tripped, "stream_strip": sentence, "stream_block": sentence, "annotate": False}


def removed_share(answer: str, assessment: Assessment, settings: GuardSettings) -> float | None:
    """The share of the answer's characters a whole-reply strip removes (None when it removes nothing)."""
    delivery = deliver("strip", answer, assessment, settings)
    if delivery.outcome != STRIPPED or not answer:
        return None
    return max(0.0, 1.0 - len(delivery.text) / len(answer))


def summarise(rows: Sequence[Labelled], assessments: Sequence[Assessment], settings: GuardSettings) -> dict[str, Any]:
    def share(group: list[tuple[Labelled, Assessment]], action: str) -> float | None:
        if not group:
            return None
        return round(sum(actions_taken(r.interaction.answer or "", a, settings)[action] for r, a in group) / len(group), 4)

    faithful = [(r, a) for r, a in zip(rows, assessments) if r.faithful]
    unfaithful = [(r, a) for r, a in zip(rows, assessments) if not r.faithful]
    cuts = [s for r, a in faithful if (s := removed_share(r.interaction.answer or "", a, settings)) is not None]
    return {
        "answers": len(rows), "faithful": len(faithful), "hallucinated": len(unfaithful),
        "faithful_altered": {action: share(faithful, action) for action in ACTIONS},
        "hallucinated_altered": {action: share(unfaithful, action) for action in ACTIONS},
        "faithful_strip_removed_chars_mean": round(sum(cuts) / len(cuts), 4) if cuts else None,
    }


def add_guard_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("guard", help="the share of faithful answers each guard action would alter, and of hallucinated ones it catches")
    p.add_argument("--data", help="dataset directory (default: $RAGTAP_DATA, else ../shared/data)")
    p.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated subset of {', '.join(DATASETS)}")
    p.add_argument("--out", help="write DIR/report.md and DIR/report.json")
    p.add_argument("--config", help="config.toml ([guard] verdicts, [thresholds], [claims], [scoring] embedder)")
    p.add_argument("--verdicts", help="the triggers to measure, comma-separated (default: the config's [guard] verdicts), "
                   "e.g. contradicted to act on contradictions only")
    p.add_argument("--limit", type=int, help="first N answers of each dataset (a quick look)")
    p.add_argument("--quiet", action="store_true")


def run_guard(args: argparse.Namespace) -> int:
    from ragtap.config import load_config
    from ragtap.evaluation.experiments.delucionqa import assess_all
    from ragtap.wiring import build_embedder, build_policy

    config = load_config(args.config)
    if args.verdicts:
        verdicts = [v.strip() for v in args.verdicts.split(",") if v.strip()]
        config = load_config(args.config, flags={"guard": {"verdicts": verdicts}})
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = [n for n in names if n not in DATASETS]
    if unknown or not names:
        raise DatasetError(f"--datasets: expected names among {', '.join(DATASETS)} (got {args.datasets!r})")
    data = resolve_data_dir(args.data)
    embedder, policy = build_embedder(config, all_cores=True), build_policy(config)
    started = time.perf_counter()
    report: dict[str, Any] = {"verdicts": list(config.guard.verdicts), "datasets": {}}
    for name in names:
        rows = load_labelled(name, dataset_file(data, DATASETS[name]))[: args.limit]
        assessments = assess_all([r.interaction for r in rows], embedder, policy, args.quiet)
        report["datasets"][name] = summarise(rows, assessments, config.guard)
    report["seconds"] = round(time.perf_counter() - started, 1)
    markdown = render_markdown(report)
    print(markdown)
    if args.out:
        save_report(Path(args.out), markdown, report)
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# The guard on labelled answers (triggers: {', '.join(report['verdicts'])})",
        "",
        "Share of answers whose delivered text each action would change (retry: a second request is made).",
        "",
        "| dataset | answers | faithful / hallucinated | " + " | ".join(ACTIONS) + " |",
        "|---|---|---|" + "---|" * len(ACTIONS),
    ]
    for name, d in report["datasets"].items():
        for label, key, count in (("faithful (false alarms)", "faithful_altered", d["faithful"]),
                                  ("hallucinated (caught)", "hallucinated_altered", d["hallucinated"])):
            lines.append(f"| {name} | {count} | {label} | " + " | ".join(_pct(d[key][a]) for a in ACTIONS) + " |")
    lines += ["", "Mean share of a faithful answer's characters removed by a whole-reply strip, when it strips: "
              + ", ".join(f"{n} {_pct(d['faithful_strip_removed_chars_mean'])}" for n, d in report["datasets"].items()),
              "", f"{report['seconds']} s."]
    return "\n".join(lines)
