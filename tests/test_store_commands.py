"""`ragtap calibrate --from-store` and `ragtap export` over a real SQLite capture store.

The store is filled with interactions whose SDRD separates grounded from parametric answers (with some
overlap), and human labels that say which is which; a few of ragtap's recorded verdicts are wrong on purpose
(recorded at thresholds too low), so agreement is below 100% at the thresholds in force and the re-derived
SDRD threshold must move up into the gap.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from pathlib import Path

import pytest

from ragtap.cli import main
from ragtap.records import interaction_from_record
from ragtap.store.base import Label
from ragtap.store.factory import open_store
from ragtap.store.settings import StoreSettings
from ragtap.types import Scores

from test_store import NOW, captured


def fill(path: Path, n: int = 160, label: bool = True) -> dict[str, bool]:
    """n interactions, every one labelled: poor (parametric) ones have SDRD ~0.45, grounded ones ~0.78."""
    rng = random.Random(7)
    truth: dict[str, bool] = {}

    async def go() -> None:
        store = open_store(StoreSettings(path=str(path), capture="all"))
        rows = []
        for i in range(n):
            poor = i % 3 == 0
            sdrd = rng.gauss(0.45 if poor else 0.78, 0.06)
            # Recorded at an SDRD threshold of 0.5: the poor answers between 0.5 and 0.62 were called grounded.
            verdict = "parametric" if sdrd < 0.5 else "grounded"
            scores = Scores(sdq=rng.uniform(0.6, 0.9), sdrd=sdrd, sda=rng.uniform(0.65, 0.95), qrd=0.7, qa=0.7, ard=0.6)
            rows.append(captured(i, id=f"r{i:04d}", time=NOW - i, scores=scores, verdict=verdict, poor_retrieval=False))
            truth[f"r{i:04d}"] = poor
        await store.add_many(rows)
        if label:
            for row in rows:
                right = "parametric" if truth[row.id] else "grounded"
                await store.add_label(Label(row.id, verdict_right=row.verdict == right, right_verdict=None if row.verdict == right else right))
        await store.close()

    asyncio.run(go())
    return truth


def test_calibrate_from_store_rederives_thresholds_and_reports_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "c.sqlite3"
    fill(store)
    fragment = tmp_path / "thresholds.toml"
    assert main(["calibrate", "--from-store", "--store", str(store), "--write", str(fragment)]) == 0
    out = capsys.readouterr().out
    assert "labelled in the store: 160" in out
    recorded = next(line for line in out.splitlines() if "ragtap's recorded verdicts" in line)
    derived = next(line for line in out.splitlines() if "re-derived (in-sample)" in line)
    agreement = lambda line: float(line.split("agreement")[1].split("%")[0])  # noqa: E731
    assert agreement(recorded) < 100.0 and agreement(derived) > agreement(recorded)
    sdrd = float(next(line for line in fragment.read_text().splitlines() if line.startswith("sdrd =")).split("=")[1])
    assert 0.5 < sdrd < 0.7  # between the two clusters, above the 0.5 the wrong verdicts were recorded at
    assert "sdrd  0.620 ->" in out  # the threshold in force (the default) next to the new one


def test_calibrate_from_store_without_labels_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "c.sqlite3"
    fill(store, n=10, label=False)
    assert main(["calibrate", "--from-store", "--store", str(store)]) == 2
    assert "no labelled interaction" in capsys.readouterr().err
    assert main(["calibrate", "--from-store", "--store", str(tmp_path / "missing.sqlite3")]) == 2
    assert "no capture store at" in capsys.readouterr().err


def test_export_writes_score_input_lines_that_score_and_calibrate_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "c.sqlite3"
    truth = fill(store, n=1200)  # more than two pages of 500
    out = tmp_path / "export.jsonl"
    assert main(["export", "--store", str(store), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 1200 and len({line["id"] for line in lines}) == 1200
    first = lines[0]
    interaction = interaction_from_record(first)  # what `ragtap score` does with each line
    assert interaction.question == first["question"] and interaction.answer == first["answer"]
    assert [d.text for d in interaction.documents] == [d["text"] if isinstance(d, dict) else d for d in first["documents"]]
    assert first["label"]["poor"] == truth[first["id"]] and first["captured"]["verdict"] in ("grounded", "parametric")
    assert first["captured"]["trace_id"] and first["captured"]["user"]
    assert main(["calibrate", str(out), "--label", "label.poor"]) == 0  # the exported scores and labels calibrate as a file
    capsys.readouterr()

    assert main(["export", "--store", str(store), "--out", str(out), "--verdict", "parametric", "--limit", "7"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 7 and {line["captured"]["verdict"] for line in lines} == {"parametric"}
    assert main(["export", "--store", str(store), "--since", "2020-01-01"]) == 2
    assert "time zone" in capsys.readouterr().err


def test_redacted_claims_keep_offsets_that_point_at_their_text() -> None:
    from ragtap.privacy import Redactor
    from ragtap.store.redact import redact_captured

    row = captured(1)
    claim = dataclasses.replace(row.claims[0], text="Mail bob@x.org now.", start=11, end=30)
    row = dataclasses.replace(row, answer="Hello you. Mail bob@x.org now.", claims=(claim,))
    redacted = redact_captured(row, Redactor((r"\S+@\S+\.\w+",)))
    (kept,) = redacted.claims
    assert redacted.answer == "Hello you. Mail [redacted] now."
    assert redacted.answer[kept.start:kept.end] == kept.text == "Mail [redacted] now."
