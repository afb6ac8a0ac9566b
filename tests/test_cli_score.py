"""`ragtap score FILE.jsonl`: the scoring core offline, run in-process through `ragtap.cli.main`."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from ragtap.cli import main

from conftest import use_embedder

METRIC_KEYS = {"sdq", "sdrd", "sda", "qrd", "qa", "ard"}
EXPECTED = {
    "thesis-1": ("grounded", False),
    "thesis-2": ("unsupported_answer", True),
    "thesis-3": ("parametric", True),
    "thesis-4": ("refusal", True),
    "thesis-5": ("refusal", True),
}


@pytest.fixture(autouse=True)
def _shared_embedder(monkeypatch: pytest.MonkeyPatch, embedder) -> None:  # type: ignore[no-untyped-def]
    """The command builds its embedder from the config; hand it the session's MiniLM instead of loading another."""
    for name in ("RAGTAP_THRESHOLD_SDQ", "RAGTAP_THRESHOLD_SDRD", "RAGTAP_THRESHOLD_SDA", "RAGTAP_THRESHOLD_QRD", "RAGTAP_THRESHOLD_QA", "RAGTAP_THRESHOLD_ARD"):
        monkeypatch.delenv(name, raising=False)
    use_embedder(monkeypatch, embedder)


def thesis_lines() -> list[str]:
    text = resources.files("ragtap.demo").joinpath("thesis_examples.jsonl").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def build_input(tmp_path: Path) -> Path:
    lines = thesis_lines()
    first = json.loads(lines[0])
    extra = [
        {  # documents as {id, text} objects, the real document second
            "id": 42,
            "question": first["question"],
            "documents": [{"id": "d-1", "text": "vcpu-based instance limits are available in all commercial aws regions"}, {"id": "d-2", "text": first["retrieved"][0]}],
            "supporting_content": first["supporting"],
            "answer": first["answer"],
            "user": "kept as is",
        },
        {"id": "no-support", "question": first["question"], "documents": first["retrieved"], "answer": first["answer"]},
        {"id": "no-docs", "question": first["question"], "documents": [], "supporting": first["supporting"], "answer": first["answer"]},
    ]
    path = tmp_path / "interactions.jsonl"
    path.write_text("\n".join(lines + [""] + [json.dumps(e) for e in extra]) + "\n", encoding="utf-8")
    return path


def test_score_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_input(tmp_path)
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(source), "--out", str(out), "--quiet"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["thesis-1", "thesis-2", "thesis-3", "thesis-4", "thesis-5", 42, "no-support", "no-docs"]
    for row in rows:
        assert set(row["scores"]) == METRIC_KEYS
        assert {"attribution", "verdict", "poor_retrieval", "explanation", "passed"} <= set(row)
        assert "document_index" in row["attribution"]
    by_id = {r["id"]: r for r in rows}
    for case_id, (verdict, poor) in EXPECTED.items():
        assert (by_id[case_id]["verdict"], by_id[case_id]["poor_retrieval"]) == (verdict, poor), by_id[case_id]["explanation"]
        assert by_id[case_id]["retrieved"] and by_id[case_id]["paper_scores"]  # the input's fields are kept

    objects = by_id[42]
    assert objects["user"] == "kept as is" and objects["documents"][1]["id"] == "d-2"
    assert objects["attribution"]["document_index"] == 1 and objects["verdict"] == "grounded"
    assert objects["scores"]["sdrd"] == pytest.approx(by_id["thesis-1"]["scores"]["sdrd"], abs=1e-5)

    no_support = by_id["no-support"]["scores"]
    assert no_support["sdq"] is None and no_support["sdrd"] is None and no_support["sda"] is None
    assert None not in (no_support["qrd"], no_support["qa"], no_support["ard"])
    assert by_id["no-docs"]["verdict"] == "unscored" and by_id["no-docs"]["poor_retrieval"] is None

    summary = capsys.readouterr().err
    assert "scored 8 interactions" in summary and "grounded" in summary


def test_score_to_stdout(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text(thesis_lines()[3] + "\n", encoding="utf-8")
    assert main(["score", str(source), "--quiet"]) == 0
    captured = capsysbinary.readouterr()
    (row,) = [json.loads(line) for line in captured.out.splitlines()]
    assert row["id"] == "thesis-4" and row["verdict"] == "refusal"


def test_thresholds_from_env_change_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text(thesis_lines()[0] + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    monkeypatch.setenv("RAGTAP_THRESHOLD_SDRD", "0.999")
    # Whole-text scores only: the SDRD threshold alone decides.
    whole_text = tmp_path / "whole.toml"
    whole_text.write_text("[scoring]\nclaim_level = false\n", encoding="utf-8")
    assert main(["score", str(source), "--out", str(out), "--quiet", "--config", str(whole_text)]) == 0
    row = json.loads(out.read_text())
    assert row["passed"]["sdrd"] is False and row["verdict"] == "parametric"
    # Claim by claim (the default), every claim of the support is found in the document: SDRD's question is
    # answered by the claims, so the failing cosine no longer makes the support parametric.
    assert main(["score", str(source), "--out", str(out), "--quiet"]) == 0
    row = json.loads(out.read_text())
    assert row["passed"]["sdrd"] is False and row["verdict"] == "grounded"
    assert all(c["supported"] for c in row["claims"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"documents": ["d"], "answer": "a"}', "'question' must be a string"),
        ('{"question": "q", "documents": [3], "answer": "a"}', "document 0"),
        ('{"question": "q", "documents": ["d"], "answer": 7}', "'answer' must be a string"),
        ('["a list"]', "expected a JSON object"),
    ],
    ids=["not_json", "no_question", "bad_document", "bad_answer", "not_object"],
)
def test_malformed_line_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(thesis_lines()[0] + "\n" + line + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{source}:2" in err and message in err
    assert not out.exists()  # nothing half-written


def test_missing_file_and_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path / "absent.jsonl"), "--quiet"]) == 2
    assert "no such file" in capsys.readouterr().err
    source = tmp_path / "one.jsonl"
    source.write_text(thesis_lines()[0] + "\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text("[thresholds]\nsdrdd = 0.5\n", encoding="utf-8")
    assert main(["score", str(source), "--config", str(config), "--quiet"]) == 2
    assert "config error" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from ragtap import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"ragtap {__version__}"


def test_out_into_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text(thesis_lines()[0] + "\n", encoding="utf-8")
    assert main(["score", str(source), "--out", str(tmp_path / "missing" / "out.jsonl"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragtap: cannot write") and "No such file or directory" in err and "Traceback" not in err


def test_batch_zero_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["score", str(tmp_path / "x.jsonl"), "--batch", "0"])
    assert stop.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_serve_on_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as taken:  # (the module's fixture selects the session's embedder by name)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--host", "127.0.0.1", "--port", str(port), "--upstream", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"ragtap: cannot listen on 127.0.0.1:{port}") and "in use" in err


def test_jobs_2_writes_the_same_lines_as_jobs_1(tmp_path: Path) -> None:
    """`--jobs 2` spreads the batches over two processes (real ones: the command runs as a subprocess, with the
    default int8 model) and writes what one job writes, line for line and in the input's order.  The documents
    recur across batches, so one job embeds some of them once (then serves them from its cache) where the two
    jobs embed them in different processes: the figures must not depend on it.  (Fails on the previous code: no
    --jobs option.)"""
    import os
    import subprocess
    import sys

    lines = []
    for number, line in enumerate(thesis_lines()):
        case = json.loads(line)
        docs = case["retrieved"]
        variants = [
            {"supporting": case["supporting"], "documents": docs},
            {"supporting": None, "documents": list(reversed(docs))},
            {"supporting": case["supporting"], "documents": docs + ["An unrelated passage about quarterly revenue growth and budgets."]},
            {"supporting": None, "documents": docs, "answer": case["answer"] + " It also supports IPv6 in every region."},
        ]
        for index, variant in enumerate(variants):
            lines.append(json.dumps({"id": f"{number}-{index}", "question": case["question"], "answer": case["answer"], **variant}))
    source = tmp_path / "interactions.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ragtap = str(Path(sys.executable).with_name("ragtap"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")}
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs-{jobs}.jsonl"
        done = subprocess.run([ragtap, "score", str(source), "--out", str(out), "--batch", "3", "--jobs", str(jobs), "--quiet"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"per second, {jobs} job" in done.stderr, done.stderr  # two processes really ran (not a silent fallback to one)
        outputs[jobs] = out.read_bytes().splitlines()
    assert len(outputs[1]) == len(lines) == 20
    assert [json.loads(line)["id"] for line in outputs[2]] == [json.loads(line)["id"] for line in lines]
    assert len({json.loads(line)["verdict"] for line in outputs[1]}) >= 3  # real, varied figures
    for one, two in zip(outputs[1], outputs[2], strict=True):
        assert one == two
