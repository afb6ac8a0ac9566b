"""The thesis-style report over labelled scores: ROC/AUC per metric and rule, threshold tables, the share of
negatives each metric flags, the random baseline; written as report.md, report.json and PNG plots.

Rules with one threshold t (the thesis used one threshold for every metric):
    primary       flag when min(SDQ, SDRD, SDA) < t          (ROC risk: -min(...))
    primary+qrd   flag when min(SDQ, SDRD, SDA, QRD) < t
    primary+qa    flag when min(SDQ, SDRD, SDA, QA) < t
and each metric alone: flag when metric < t (ROC risk: -metric).  A row counts for a rule only when all the
rule's metrics have a value (a reply ragtap could not split has no SDQ/SDRD/SDA); the excluded rows are
counted in the report.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtap.evaluation import stats
from ragtap.evaluation.extras import require
from ragtap.types import METRICS, PRIMARY_METRICS

THESIS_THRESHOLDS: tuple[float, ...] = (0.70, 0.75, 0.80, 0.85)
RULES: dict[str, tuple[str, ...]] = {
    "primary": PRIMARY_METRICS,
    "primary+qrd": (*PRIMARY_METRICS, "qrd"),
    "primary+qa": (*PRIMARY_METRICS, "qa"),
}
SINGLE: tuple[str, ...] = ("qrd", "sdq", "sdrd", "sda", "qa", "ard")
assert set(SINGLE) == set(METRICS)


def scorers() -> dict[str, tuple[str, ...]]:
    """The rules, then every metric alone: name -> the metrics whose minimum is compared with t."""
    return {**RULES, **{m: (m,) for m in SINGLE}}


def min_values(scores: Sequence[Mapping[str, float | None]], metrics: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(mask of rows with every metric present, the minimum over the metrics for those rows)."""
    mask = np.array([all(s.get(m) is not None for m in metrics) for s in scores], dtype=bool)
    values = np.array([min(float(s[m]) for m in metrics) for s, ok in zip(scores, mask) if ok], dtype=np.float64)  # type: ignore[arg-type]
    return mask, values


def sweep_thresholds(values: Sequence[np.ndarray], step: float = 0.05) -> list[float]:
    """Round thresholds over the observed range (1st to 99th percentile of all values), `step` apart."""
    pooled = np.concatenate([v for v in values if v.size]) if any(v.size for v in values) else np.zeros(0)
    if pooled.size == 0:
        return []
    lo, hi = np.quantile(pooled, [0.01, 0.99])
    start = math.floor(lo / step) * step
    stop = math.ceil(hi / step) * step
    count = int(round((stop - start) / step)) + 1
    return [round(start + i * step, 4) for i in range(max(count, 1))]


def _save(fig: Any, out_dir: Path, name: str) -> str:
    """Write one plot as PNG and free it; returns the file name (the reports link plots by name)."""
    plt = require("matplotlib.pyplot")

    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


@dataclass(slots=True)
class Curve:
    name: str
    metrics: tuple[str, ...]
    y: np.ndarray
    values: np.ndarray  # the metric (or the rule's minimum); low = poor
    excluded: int

    @property
    def n(self) -> int:
        return int(self.y.size)

    @property
    def positives(self) -> int:
        return int(self.y.sum())

    @property
    def usable(self) -> bool:
        return self.n > 0 and 0 < self.positives < self.n

    def auc(self) -> float | None:
        return stats.auc(self.y, -self.values) if self.n else None


@dataclass(slots=True)
class ClassificationReport:
    title: str
    positive_name: str
    y: np.ndarray
    curves: dict[str, Curve]
    thesis_thresholds: tuple[float, ...]
    sweep: list[float]
    verdicts: dict[str, Counter[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------------------- numbers

    def table(self, thresholds: Sequence[float], names: Sequence[str]) -> list[dict[str, Any]]:
        rows = []
        for name in names:
            curve = self.curves.get(name)
            if curve is None or not curve.n:
                continue
            for t in thresholds:
                c = stats.confusion_below(curve.y, curve.values, t)
                rows.append({"threshold": round(float(t), 4), "rule": name, "n": curve.n, **c.as_dict()})
        return rows

    def best(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for name, curve in self.curves.items():
            if not curve.usable:
                continue
            entry = {}
            for objective in ("f1", "f2", "youden"):
                cut = stats.best_cut(curve.y, curve.values, objective)
                entry[objective] = {"threshold": round(cut.threshold, 4), **cut.confusion.as_dict()}
            out[name] = entry
        return out

    def flag_share(self, thresholds: Sequence[float]) -> dict[str, dict[str, dict[str, float]]]:
        """metric -> threshold -> the share of negatives (and of positives) flagged: the thesis's Figure 4.3."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for name in SINGLE:
            curve = self.curves.get(name)
            if curve is None or not curve.n:
                continue
            out[name] = {}
            for t in thresholds:
                c = stats.confusion_below(curve.y, curve.values, t)
                out[name][f"{t:.2f}"] = {"negatives": c.fpr, "positives": c.recall}
        return out

    def as_dict(self) -> dict[str, Any]:
        n = int(self.y.size)
        positives = int(self.y.sum())
        # every metric and rule is a key; None when the data have no scores for it (or one class only)
        aucs = {name: (curve.auc() if curve.n else None) for name, curve in self.curves.items()}
        curves = {}
        for name, curve in self.curves.items():
            entry: dict[str, Any] = {"metrics": list(curve.metrics), "n": curve.n, "positives": curve.positives, "excluded": curve.excluded}
            if curve.usable:
                roc = stats.roc_curve(curve.y, -curve.values)
                entry["auc"] = aucs[name]
                # thresholds in metric units: the point flags value <= -risk
                entry["roc"] = {
                    "fpr": [round(float(v), 6) for v in roc.fpr],
                    "tpr": [round(float(v), 6) for v in roc.tpr],
                    "threshold": [None if not np.isfinite(v) else round(float(-v), 6) for v in roc.thresholds],
                }
            curves[name] = entry
        return {
            "title": self.title,
            "positive_class": self.positive_name,
            "n": n,
            "positives": positives,
            "negatives": n - positives,
            "prevalence": positives / n if n else None,
            "auc": aucs,
            "curves": curves,
            "thesis_thresholds": list(self.thesis_thresholds),
            "threshold_table": self.table(self.thesis_thresholds, list(self.curves)),
            "sweep_thresholds": self.sweep,
            "sweep_table": self.table(self.sweep, [name for name in self.curves if name in RULES or name == "qrd"]),
            "best": self.best(),
            "flag_share": self.flag_share(sorted(set(self.thesis_thresholds) | set(self.sweep))),
            "random_baseline": stats.random_baseline(positives / n) if n else None,
            "verdicts": {label: dict(counter) for label, counter in self.verdicts.items()},
            "notes": self.notes,
        }

    # ---------------------------------------------------------------------------------------- markdown

    def markdown(self, data: dict[str, Any] | None = None) -> str:
        d = data or self.as_dict()
        lines = [f"## {self.title}", ""]
        lines.append(f"{d['n']} interactions, {d['positives']} positive (*{self.positive_name}*), {d['negatives']} negative; prevalence {_f(d['prevalence'])}.")
        lines.append("")
        lines += ["### ROC AUC", "", "Risk = minus the metric (or minus the rule's minimum): low similarity predicts the positive class.", ""]
        lines += ["| metric / rule | n | positives | excluded (missing scores) | AUC |", "|---|---|---|---|---|"]
        for name, curve in d["curves"].items():
            if curve["n"]:
                lines.append(f"| {name} | {curve['n']} | {curve['positives']} | {curve['excluded']} | {_f(d['auc'].get(name))} |")
        missing = [name for name, curve in d["curves"].items() if not curve["n"]]
        if missing:
            lines.append("")
            lines.append(f"Not available in these data (no scores): {', '.join(missing)}.")
        lines.append("")
        lines += ["### The thesis's thresholds", "", "Flag as poor when the metric (or the rule's minimum) is below t. The thesis's thresholds were chosen for OpenAI text-embedding-3; with another embedding model see the sweep below.", ""]
        lines += _table_md(d["threshold_table"])
        if d["sweep_table"]:
            lines += ["", "### Sweep over the observed score range", ""]
            lines += _table_md(d["sweep_table"])
        if d["best"]:
            lines += ["", "### Best single thresholds (chosen on these same data: optimistic)", ""]
            lines += ["| metric / rule | objective | threshold | precision | recall | F1 | F2 |", "|---|---|---|---|---|---|---|"]
            for name, entry in d["best"].items():
                for objective, cut in entry.items():
                    lines.append(f"| {name} | {objective} | {cut['threshold']:.3f} | {_f(cut['precision'])} | {_f(cut['recall'])} | {_f(cut['f1'])} | {_f(cut['f2'])} |")
        if d["flag_share"]:
            ts = sorted({t for entry in d["flag_share"].values() for t in entry}, key=float)
            lines += ["", "### Share of negatives flagged by each metric (the thesis's Figure 4.3)", ""]
            lines.append("| metric | " + " | ".join(ts) + " |")
            lines.append("|---|" + "---|" * len(ts))
            for name, entry in d["flag_share"].items():
                lines.append(f"| {name} | " + " | ".join(_f(entry[t]["negatives"], 3) for t in ts) + " |")
        if d["random_baseline"]:
            rb = d["random_baseline"]
            lines += ["", "### Random labelling baseline", ""]
            lines.append(f"Flag half at random: precision = prevalence = {_f(rb['precision'])}, recall 0.5, F1 {_f(rb['f1'])}, F2 {_f(rb['f2'])}, accuracy 0.5.")
        if d["verdicts"]:
            lines += ["", "### ragtap's verdicts (configured thresholds) by class", ""]
            names = sorted({v for counter in d["verdicts"].values() for v in counter})
            lines.append("| class | " + " | ".join(names) + " |")
            lines.append("|---|" + "---|" * len(names))
            for label, counter in d["verdicts"].items():
                lines.append(f"| {label} | " + " | ".join(str(counter.get(v, 0)) for v in names) + " |")
        if d["notes"]:
            lines += ["", "### Notes", ""] + [f"- {note}" for note in d["notes"]]
        return "\n".join(lines) + "\n"

    # --------------------------------------------------------------------------------------------- plots

    def plot(self, out_dir: Path, prefix: str = "") -> list[str]:
        require("matplotlib").use("Agg")
        plt = require("matplotlib.pyplot")

        written = []
        usable = {name: c for name, c in self.curves.items() if c.usable}
        if not usable:
            return written
        fig, ax = plt.subplots(figsize=(6, 6))
        for name, curve in usable.items():
            roc = stats.roc_curve(curve.y, -curve.values)
            style = "-" if name in RULES else "--"
            ax.plot(roc.fpr, roc.tpr, style, label=f"{name} (AUC {curve.auc():.3f})")
        ax.plot([0, 1], [0, 1], ":", color="grey", label="random")
        ax.set_xlabel("false positive rate (negatives flagged)")
        ax.set_ylabel(f"true positive rate ({self.positive_name} flagged)")
        ax.set_title(f"ROC: {self.title}")
        ax.legend(fontsize=8, loc="lower right")
        written.append(_save(fig, out_dir, f"{prefix}roc.png"))

        pooled = [c.values for c in usable.values()]
        lo = float(min(np.quantile(v, 0.01) for v in pooled))
        hi = float(max(np.quantile(v, 0.99) for v in pooled))
        grid = np.linspace(lo, hi, 120)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        rule_names = [n for n in usable if n in RULES] or list(usable)
        for name in rule_names:
            curve = usable[name]
            conf = stats.sweep_below(curve.y, curve.values, grid)
            line = ax.plot(grid, [c.f1 for c in conf], "-", label=f"{name} F1")
            ax.plot(grid, [c.f2 for c in conf], "--", color=line[0].get_color(), label=f"{name} F2")
        if self.y.size:
            rb = stats.random_baseline(float(self.y.mean()))
            ax.axhline(rb["f1"], color="grey", linestyle=":", label="random F1")
        ax.set_xlabel("threshold t (flag when score < t)")
        ax.set_ylabel("F-score")
        ax.set_title(f"F1 / F2 against threshold: {self.title}")
        ax.legend(fontsize=8)
        written.append(_save(fig, out_dir, f"{prefix}f1_f2.png"))

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for metric in SINGLE:
            curve = usable.get(metric)
            if curve is None:
                continue
            conf = stats.sweep_below(curve.y, curve.values, grid)
            ax.plot(grid, [c.fpr for c in conf], label=metric.upper())
        ax.set_xlabel("threshold t")
        ax.set_ylabel("share of negatives flagged")
        ax.set_title(f"Negatives flagged per metric: {self.title}")
        ax.legend(fontsize=8)
        written.append(_save(fig, out_dir, f"{prefix}flag_share.png"))
        return written


def build_report(
    labels: Sequence[bool],
    scores: Sequence[Mapping[str, float | None]],
    *,
    title: str,
    positive_name: str,
    verdicts: Sequence[str | None] | None = None,
    thesis_thresholds: Sequence[float] = THESIS_THRESHOLDS,
    class_names: tuple[str, str] = ("positive", "negative"),
) -> ClassificationReport:
    y = np.asarray(labels, dtype=bool)
    if y.size != len(scores):
        raise ValueError("one score dict per label")
    curves = {}
    for name, metrics in scorers().items():
        mask, values = min_values(scores, metrics)
        curves[name] = Curve(name, metrics, y[mask], values, int((~mask).sum()))
    sweep = sweep_thresholds([curves[m].values for m in SINGLE if m in curves])
    report = ClassificationReport(title, positive_name, y, curves, tuple(thesis_thresholds), sweep)
    if verdicts is not None:
        for label, verdict in zip(y, verdicts):
            report.verdicts.setdefault(class_names[0] if label else class_names[1], Counter())[verdict or "none"] += 1
    return report


def _f(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _table_md(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["| threshold | rule | n | TP | FP | TN | FN | accuracy | precision | recall | F1 | F2 |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['threshold']:.2f} | {r['rule']} | {r['n']} | {r['tp']} | {r['fp']} | {r['tn']} | {r['fn']} | "
            f"{_f(r['accuracy'])} | {_f(r['precision'])} | {_f(r['recall'])} | {_f(r['f1'])} | {_f(r['f2'])} |"
        )
    return lines


def write_report(out_dir: Path, header_md: str, sections: Sequence[str], data: dict[str, Any], plots: Sequence[str] = ()) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    md = [header_md.rstrip(), ""]
    if plots:
        md += ["Plots: " + ", ".join(f"[{p}]({p})" for p in plots), ""]
        md += [f"![{p}]({p})" for p in plots if p.endswith("roc.png")]
        md.append("")
    md += [s.rstrip() + "\n" for s in sections]
    (out_dir / "report.md").write_text("\n".join(md), encoding="utf-8")
    (out_dir / "report.json").write_text(json.dumps(data, indent=1, ensure_ascii=False, default=_json_default), encoding="utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def jsonl(rows: Iterable[dict[str, Any]]) -> str:
    """One JSON object per line (UTF-8 as written), for the error-analysis dumps beside a report."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def save_report(out: Path, markdown: str, report: dict[str, Any], extra: dict[str, str] | None = None) -> None:
    """DIR/report.md, DIR/report.json and any extra text files; says on stderr what it wrote."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown, encoding="utf-8")
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name, text in (extra or {}).items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(str(out / n) for n in ['report.md', 'report.json', *(extra or {})])}", file=sys.stderr)
