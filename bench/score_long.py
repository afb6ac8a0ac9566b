"""The whole `ragtap score` command on long documents: int8 against fp32, and 1 job against N, same run.

    RAGTAP_DATA=/work/shared/data .venv/bin/python bench/score_long.py [--rows 600] [--rounds 3] [--jobs 1,2]
        [--baseline-src DIR] [--json]

Input: the first `--rows` SQuAD 2.0 dev paragraphs (~125 words, one to two passages each) that have an answerable
question, one interaction per paragraph: its first answerable question, the paragraph as the retrieved document,
the gold answer, and the paragraph's sentence holding the answer as the supporting content (~2,500 distinct texts
to embed, a quarter of them over 100 wordpieces).  Each setting runs `python -m ragtap score FILE --out OUT --quiet
[--jobs J]` as a fresh process (start-up and model load included: what a user waits for), with
`RAGTAP_EMBEDDER=minilm` (int8, the default) or `minilm-fp32`; the settings alternate within each round so machine
noise hits them alike.  Reported: the median wall seconds of the whole command, interactions per second, the CPU
seconds of the command and its jobs, and the ratios: int8 over fp32 at each job count, and N jobs over one.  The
int8 and fp32 outputs are compared verdict by verdict (agreement), and the 1-job and N-job outputs of one embedder
byte by byte.

`--baseline-src DIR`: also run int8 and fp32 (without --jobs, which older code lacks) from another checkout
(PYTHONPATH=DIR), in the same rounds: the previous code's ratio, measured beside this one's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragtap.evaluation.datasets import load_squad2, resolve_data_dir  # noqa: E402
from ragtap.scoring.sentences import split_sentences  # noqa: E402

EMBEDDERS = ("minilm", "minilm-fp32")


def write_input(data_dir: Path, rows: int, path: Path) -> int:
    seen: set[int] = set()
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        for q in load_squad2(data_dir):
            if q.paragraph in seen or not q.answers:
                continue
            seen.add(q.paragraph)
            answer = q.answers[0].text
            supporting = next((s for s in split_sentences(q.context) if answer in s), None)
            line = {"id": q.id, "question": q.question, "documents": [q.context], "answer": answer, "supporting": supporting}
            handle.write(json.dumps(line) + "\n")
            written += 1
            if written == rows:
                break
    return written


@dataclass
class Setting:
    label: str
    embedder: str
    jobs: int | None  # None: the command's default (one per core), and no --jobs flag at all
    source: Path = ROOT
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    output: Path | None = None

    def run(self, source_file: Path, out_dir: Path) -> None:
        self.output = out_dir / f"{self.label}.jsonl"
        command = [sys.executable, "-m", "ragtap", "score", str(source_file), "--out", str(self.output), "--quiet"]
        if self.jobs is not None:
            command += ["--jobs", str(self.jobs)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTAP_")}
        env.update(RAGTAP_EMBEDDER=self.embedder, PYTHONPATH=str(self.source))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env, cwd=self.source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=1800)
        self.walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and its forked jobs, once reaped
        self.cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def verdicts(path: Path) -> list[str]:
    return [json.loads(line)["verdict"] for line in path.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}", help="job counts to compare (default 1,<cores>)")
    parser.add_argument("--baseline-src", type=Path, help="another checkout to measure beside this one (its default settings)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    job_counts = sorted({int(j) for j in args.jobs.split(",")})
    with tempfile.TemporaryDirectory(prefix="ragtap-bench-score-") as tmp:
        tmp_dir = Path(tmp)
        source_file = tmp_dir / "squad-long.jsonl"
        rows = write_input(resolve_data_dir(args.data), args.rows, source_file)
        settings = [Setting(f"{e}-jobs{j}", e, j) for j in job_counts for e in EMBEDDERS]
        if args.baseline_src is not None:
            settings += [Setting(f"baseline-{e}", e, None, args.baseline_src.resolve()) for e in EMBEDDERS]
        load = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for setting in settings:
                setting.run(source_file, tmp_dir)
        load.append(os.getloadavg()[0])
        by = {s.label: s for s in settings}
        wall = {s.label: statistics.median(s.walls) for s in settings}
        cpu = {s.label: statistics.median(s.cpus) for s in settings}
        result: dict[str, object] = {
            "rows": rows, "rounds": args.rounds, "cores": os.cpu_count(), "load_average": load,
            "wall_s": wall, "cpu_s": cpu, "per_s": {k: rows / v for k, v in wall.items()},
            "int8_over_fp32": {j: wall[f"minilm-fp32-jobs{j}"] / wall[f"minilm-jobs{j}"] for j in job_counts},
            "int8_over_fp32_cpu": {j: cpu[f"minilm-fp32-jobs{j}"] / cpu[f"minilm-jobs{j}"] for j in job_counts},
            "jobs_speedup": {e: wall[f"{e}-jobs{job_counts[0]}"] / wall[f"{e}-jobs{job_counts[-1]}"] for e in EMBEDDERS},
        }
        ref, cand = verdicts(by[f"minilm-fp32-jobs{job_counts[0]}"].output), verdicts(by[f"minilm-jobs{job_counts[0]}"].output)  # type: ignore[arg-type]
        result["verdict_agreement"] = sum(a == b for a, b in zip(ref, cand, strict=True)) / len(ref)
        result["jobs_identical"] = {
            e: len({by[f"{e}-jobs{j}"].output.read_bytes() for j in job_counts}) == 1 for e in EMBEDDERS  # type: ignore[union-attr]
        }
        if args.baseline_src is not None:
            result["baseline_int8_over_fp32"] = wall["baseline-minilm-fp32"] / wall["baseline-minilm"]
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{rows} SQuAD paragraphs as long-document interactions, {args.rounds} rounds, {os.cpu_count()} cores, "
          f"load average {load[0]:.1f} -> {load[1]:.1f}")
    print(f"{'setting':<26}{'wall s':>8}{'per s':>8}{'cpu s':>8}")
    for s in settings:
        print(f"{s.label:<26}{wall[s.label]:>8.1f}{rows / wall[s.label]:>8.1f}{cpu[s.label]:>8.1f}")
    for j, ratio in result["int8_over_fp32"].items():  # type: ignore[attr-defined]
        print(f"int8 / fp32, {j} job(s): {ratio:.2f}x wall, {result['int8_over_fp32_cpu'][j]:.2f}x cpu")  # type: ignore[index]
    for e, speedup in result["jobs_speedup"].items():  # type: ignore[attr-defined]
        print(f"{e}: {job_counts[-1]} jobs / 1 job: {speedup:.2f}x wall; outputs identical: {result['jobs_identical'][e]}")  # type: ignore[index]
    print(f"verdict agreement int8 vs fp32: {result['verdict_agreement']:.2%}")
    if args.baseline_src is not None:
        print(f"baseline ({args.baseline_src}) int8 / fp32: {result['baseline_int8_over_fp32']:.2f}x wall")


if __name__ == "__main__":
    main()
