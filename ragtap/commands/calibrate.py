"""`ragtap calibrate SCORED.jsonl --label FIELD`: choose per-metric thresholds from labelled interactions.

`ragtap calibrate --from-store [--store WHERE]`: the same from the human labels in the capture store (the
triage page's "verdict right / wrong"), with how far the thresholds in force agree with those labels
(ragtap/evaluation/from_store.py).

The label field is truthy for the positive class ("poor": unanswerable, unfaithful, wrong); `--positive` /
`--negative` name the classes of a text field instead (e.g. `--label reading --negative grounded`).  Lines
without ragtap's `scores` are scored here with the configured embedder.  See ragtap/evaluation/calibration.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragtap.config import ConfigError, load_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("calibrate", help="choose thresholds from labelled, scored interactions")
    p.add_argument("file", nargs="?", help="JSON lines with ragtap's 'scores' (or the texts, to be scored) and a label field")
    p.add_argument("--label", help="the label field (dotted path allowed); truthy = positive = poor")
    p.add_argument("--from-store", action="store_true", help="calibrate on the capture store's human labels instead of a file")
    p.add_argument("--store", help="with --from-store: the SQLite file or postgresql:// URL (default: [store] of --config)")
    p.add_argument("--positive", action="append", default=[], help="label value(s) that mean positive (poor); repeatable")
    p.add_argument("--negative", action="append", default=[], help="label value(s) that mean negative (fine); repeatable")
    p.add_argument("--objective", choices=("f1", "f2", "recall"), default="f1", help="maximise F1 or F2, or reach --target-recall (default f1)")
    p.add_argument("--target-recall", type=float, default=0.9, help="with --objective recall: the recall to reach (default 0.9)")
    p.add_argument("--holdout", type=float, default=0.3, help="held-out share for checking the thresholds (default 0.3; 0 = fit on all)")
    p.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    p.add_argument("--write", help="write a config.toml fragment ([thresholds] table) here")
    p.add_argument("--json", help="write the full result (all operating points, the logistic model) as JSON here")
    p.add_argument("--config", help="config.toml (embedder, thresholds) for scoring lines that have no scores")
    p.set_defaults(func=run)


def _scorer(config_path: str | None):  # type: ignore[no-untyped-def]
    def score(records: list[dict[str, Any]]) -> list[dict[str, float | None]]:
        from ragtap.pipeline.batch import assess_batch
        from ragtap.wiring import build_embedder, build_policy
        from ragtap.records import RecordError, interaction_from_record

        config = load_config(config_path)
        print(f"ragtap calibrate: scoring {len(records)} lines that have no 'scores' ({config.scoring.embedder})", file=sys.stderr)
        try:
            items = [interaction_from_record(r, f"line {i}") for i, r in enumerate(records, 1)]
        except RecordError as error:
            from ragtap.evaluation.calibration import CalibrationError

            raise CalibrationError(f"cannot score a line without 'scores': {error}") from error
        assessments = assess_batch(items, build_embedder(config), build_policy(config))
        return [a.scores.as_dict() for a in assessments]

    return score


def run(args: argparse.Namespace) -> int:
    if args.from_store:
        if args.file or args.label:
            print("ragtap calibrate: --from-store reads the store's labels: give no file and no --label", file=sys.stderr)
            return 2
        return run_from_store(args)
    if not args.file or not args.label:
        print("ragtap calibrate: give a FILE and --label FIELD, or --from-store", file=sys.stderr)
        return 2
    from ragtap.evaluation.calibration import CalibrationError, calibrate, format_result, read_labelled, toml_fragment

    try:
        data = read_labelled(Path(args.file), args.label, positives=args.positive, negatives=args.negative, scorer=_scorer(args.config))
        result = calibrate(
            data,
            objective=args.objective,
            target_recall=args.target_recall if args.objective == "recall" else None,
            holdout=args.holdout,
            seed=args.seed,
        )
    except (CalibrationError, ConfigError, ValueError) as error:
        print(f"ragtap calibrate: {error}", file=sys.stderr)
        return 2
    if data.unlabelled:
        result.notes.append(f"{data.unlabelled} lines without a value in {args.label!r} were skipped")
    print(format_result(result))
    if args.write:
        Path(args.write).write_text(toml_fragment(result, source=f"{args.file} --label {args.label}"), encoding="utf-8")
        print(f"\nwrote {args.write}")
    if args.json:
        Path(args.json).write_text(json.dumps(result.as_dict(), indent=1), encoding="utf-8")
    return 0


def run_from_store(args: argparse.Namespace) -> int:
    import asyncio

    from ragtap.commands.common import store_settings
    from ragtap.evaluation.calibration import CalibrationError, calibrate, format_result, toml_fragment
    from ragtap.evaluation.from_store import format_agreement, labelled_scores
    from ragtap.store.base import StoreError
    from ragtap.store.factory import open_store

    settings = store_settings(args.config, args.store)

    async def read_labels() -> list:  # type: ignore[type-arg]
        store = open_store(settings)
        try:
            return await store.labelled()
        finally:
            await store.close()

    try:
        rows = asyncio.run(read_labels())
        labels = labelled_scores(rows)
        result = calibrate(labels.data, objective=args.objective, target_recall=args.target_recall if args.objective == "recall" else None,
                           holdout=args.holdout, seed=args.seed)
    except (CalibrationError, StoreError, ValueError) as error:
        print(f"ragtap calibrate: {error}", file=sys.stderr)
        return 2
    print(format_result(result))
    print()
    print(format_agreement(labels, rows, load_config(args.config).thresholds, result.thresholds))
    if args.write:
        Path(args.write).write_text(toml_fragment(result, source="--from-store"), encoding="utf-8")
        print(f"\nwrote {args.write}")
    if args.json:
        Path(args.json).write_text(json.dumps(result.as_dict(), indent=1), encoding="utf-8")
    return 0
