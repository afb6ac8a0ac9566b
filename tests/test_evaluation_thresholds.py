"""The derivation of the default thresholds (ragtap/evaluation/experiments/thresholds.py): the selection rule by hand, the
pair sets on tiny fixtures with a bag-of-words embedder, and the thesis examples' constraint on the shipped
defaults with the real MiniLM."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.evaluation.experiments import thresholds as th


class BagOfWords:
    """A deterministic stand-in embedder: hashed word counts, unit length."""

    name = "test-bag-of-words"
    dim = 256

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def test_weighted_youden_by_hand() -> None:
    # fail (True) values 0.1, 0.2; pass values 0.3, 0.5: any cut in (0.2, 0.3) separates them -> J = 1,
    # and the middle of the optimal cuts is chosen
    y = np.array([True, True, False, False])
    v = np.array([0.1, 0.2, 0.3, 0.5])
    t, j, tpr, fpr = th.weighted_youden(y, v, np.ones(4))
    assert (j, tpr, fpr) == (1.0, 1.0, 0.0)
    assert t == pytest.approx(0.25)
    # overlap: fail 0.1, 0.4; pass 0.3, 0.5.  Cuts: <0.2 -> J .5; <0.35 -> 1/2 - 1/2 = 0; <0.45 -> 1 - 1/2 = .5
    # the two optimal cuts (0.2 and 0.45) are not adjacent; their middle is reported
    y = np.array([True, True, False, False])
    t, j, _, _ = th.weighted_youden(y, np.array([0.1, 0.4, 0.3, 0.5]), np.ones(4))
    assert j == pytest.approx(0.5)
    # weights: a heavy failing 0.4 makes the higher cut the only optimum
    t, j, tpr, _ = th.weighted_youden(y, np.array([0.1, 0.4, 0.3, 0.5]), np.array([1.0, 3.0, 1.0, 1.0]))
    assert t == pytest.approx(0.45) and tpr == pytest.approx(1.0)


def test_sentences_and_declarative() -> None:
    text = 'Etna is a volcano. It erupts often ("very often"). In 1669, it reached Catania! 3 craters exist.'
    assert [text[a:b] for a, b in th.sentences(text)] == [
        "Etna is a volcano.",
        'It erupts often ("very often").',
        "In 1669, it reached Catania!",
        "3 craters exist.",
    ]
    assert th.declarative("Where is Mount Etna?", "Sicily") == "Where is Mount Etna: Sicily."


def _fixture(data: Path) -> None:
    (data / "squad2").mkdir(parents=True)
    paragraphs = []
    for a, topic in enumerate(["volcano", "bicycle", "violin"]):
        for p in range(2):
            context = (f"The {topic} article paragraph {p} starts here. The {topic} was made in city{a}{p} long ago. "
                       f"Many people like the {topic} for reason{a}{p}. Nobody knows the {topic} owner{a}{p}.")
            qas = [
                {"id": f"{a}{p}a", "question": f"Where was the {topic} made?", "answers": [{"text": f"city{a}{p}", "answer_start": context.index(f"city{a}{p}")}], "is_impossible": False},
                {"id": f"{a}{p}b", "question": f"Why do people like the {topic}?", "answers": [{"text": f"reason{a}{p}", "answer_start": context.index(f"reason{a}{p}")}], "is_impossible": False},
                {"id": f"{a}{p}c", "question": f"Who sold the {topic}?", "answers": [], "is_impossible": True},
            ]
            paragraphs.append((topic, {"context": context, "qas": qas}))
    articles = {}
    for topic, paragraph in paragraphs:
        articles.setdefault(topic, []).append(paragraph)
    (data / "squad2" / "dev-v2.0.json").write_text(json.dumps({"data": [{"title": t, "paragraphs": ps} for t, ps in articles.items()]}))
    (data / "wikieval").mkdir()
    rows = []
    for i, topic in enumerate(["comet", "glacier", "reef", "desert"]):
        rows.append({"row": i, "question": f"Question: What is special about the {topic}?", "context_v1": repr([f"The {topic} is special because of its size and age."]),
                     "answer": f"Answer: The {topic} is special because of its size and age.", "ungrounded_answer": f"The {topic} is famous for colours.",
                     "poor_answer": f"The {topic} is special."})
    (data / "wikieval" / "wikieval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "cloud_faq").mkdir()
    faq = [{"source": "aws", "filename": "f", "question": f"what is aws service{i}?", "answer": f"aws service{i} stores data{i} in buckets{i}"} for i in range(8)]
    faq += [{"source": s, "filename": None, "question": f"how do i configure {s} widget{i}?", "answer": "x"} for i in range(6) for s in ("ibm", "gcp")]
    (data / "cloud_faq" / "cloud_faq_dataset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in faq))


def test_derive_end_to_end_on_a_fixture(tmp_path: Path) -> None:
    _fixture(tmp_path)
    result = th.derive(tmp_path, BagOfWords(), n=20, qrd_n=10, seed=0, cache_dir=tmp_path / "idx", quiet=True)
    assert set(result["thresholds"]) == {"sdq", "sdrd", "sda", "qrd", "qa", "ard"}
    metrics = result["metrics"]
    # every SQuAD question of the fixture has a usable answer sentence and a sibling paragraph
    squad = next(s for s in metrics["sdq"]["sources"] if s["source"] == "squad2")
    assert squad["pass"] == squad["fail"] == 12
    assert [s["used"] for s in metrics["sdrd"]["sources"]] == [True, False, True]  # same article, other article, wikieval
    assert [s["source"] for s in metrics["qa"]["sources"]] == ["wikieval", "wikieval poor_answer"]
    qa = metrics["qa"]["sources"][0]
    assert (qa["pass"], qa["fail"]) == (4, 12)  # each question against the three other answers
    qrd = metrics["qrd"]["sources"][0]
    assert (qrd["pass"], qrd["fail"]) == (4, 6)  # round(10 * 247/400) gcp/ibm questions
    for m in metrics.values():
        assert -1.0 <= m["chosen"] <= 1.0 and 0.0 <= m["auc"] <= 1.0
    md = th.markdown(result)
    assert "| QRD |" in md and "[thresholds]" in th.toml(result)
    assert th.plot(result, tmp_path) == "thresholds.png"


@pytest.fixture(scope="module")
def thesis_scored():  # type: ignore[no-untyped-def]
    from ragtap.embedding.factory import make_embedder

    return th.thesis_scores(make_embedder("minilm"))


def test_the_shipped_defaults_keep_the_thesis_verdicts(thesis_scored) -> None:  # type: ignore[no-untyped-def]
    assert th.check_examples(DEFAULT_THRESHOLDS, thesis_scored) == []
    for metric, (lo, hi) in th.allowed_intervals(thesis_scored).items():
        assert lo < DEFAULT_THRESHOLDS.of(metric) <= hi, metric


def test_an_out_of_range_threshold_is_caught(thesis_scored) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    too_high_qrd = dataclasses.replace(DEFAULT_THRESHOLDS, qrd=0.95)  # example 1 would be poor retrieval
    assert any(p.startswith("thesis-1") for p in th.check_examples(too_high_qrd, thesis_scored))
    too_high_qa = dataclasses.replace(DEFAULT_THRESHOLDS, qa=0.75)  # example 3 (QA .70) would become a refusal
    assert any(p.startswith("thesis-3") for p in th.check_examples(too_high_qa, thesis_scored))
