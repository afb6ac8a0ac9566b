"""Tests for `ragtap experiment wikieval` (ragtap/evaluation/experiments/wikieval.py): data clean-up, the Table 1 protocol (ties
count half), the report files, and the judge path over real HTTP against a scripted judge.

The embedding model is replaced by a hashed bag-of-words embedder so the whole 50-row run takes about a second;
the lexical signals do not depend on the embedder, so their agreement figures are the real ones.  The MiniLM
figures quoted in docs/judge.md come from the command itself (set RAGTAP_WIKIEVAL_FULL=1 to check them here:
it embeds ~3,000 texts, a minute or more on a CPU)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from ragtap.evaluation.experiments import wikieval as W
from ragtap.testing.judge import QUESTIONS, STATEMENTS, VERIFY, _section, _STATEMENT_LINE, generic_ragas_script, prompt_kind, user_text
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream

from conftest import use_embedder

DATA = W.data_file(os.environ.get("RAGTAP_DATA", str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data")))
needs_data = pytest.mark.skipif(not DATA.is_file(), reason=f"WikiEval not found at {DATA}")


class BagOfWords:
    """Hashed bag-of-words vectors: deterministic, fast, and good enough to exercise every signal."""

    name = "bag-of-words"
    dim = 512

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest()[:6], 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


@pytest.fixture
def bag_of_words(monkeypatch: pytest.MonkeyPatch) -> None:
    use_embedder(monkeypatch, BagOfWords())


def run_experiment(argv: list[str]) -> int:
    from ragtap.cli import main

    return main(["experiment", "wikieval", *argv])


# ---------------------------------------------------------------------------------------------- protocol


def test_ties_count_half_and_missing_scores_are_ties() -> None:
    assert [W.preference(0.9, 0.1), W.preference(0.1, 0.9), W.preference(0.5, 0.5), W.preference(None, 0.3)] == [1.0, 0.0, 0.5, 0.5]
    outcome = W.MetricOutcome([1.0, 0.5, 0.0, 1.0], "x", "cosine")
    assert outcome.agreement == 0.625 and outcome.ties == 1 and outcome.halves() == (0.75, 0.5)
    lo, hi = W.bootstrap_ci([1.0] * 10)
    assert lo == hi == 1.0


def test_context_parsing_and_text_clean_up() -> None:
    from ragtap.evaluation.datasets import wikieval_contexts, wikieval_row

    assert wikieval_contexts("['First passage.', 'Second passage.']") == ("First passage.", "Second passage.")
    assert wikieval_contexts("[not a list") == ("[not a list",) and wikieval_contexts(["a", "b"]) == ("a", "b")
    row = wikieval_row({"question": "Question: Who?", "context_v1": "['C.']", "answer": "Answer: Him.",
                        "ungrounded_answer": "Her.", "poor_answer": "Someone.'"}, 7)
    assert (row.row, row.question, row.context, row.answer, row.poor_answer) == (7, "Who?", "C.", "Him.", "Someone.")
    assert row.raw_candidate("answer_relevance", True) == "Answer: Him." and row.candidate("faithfulness", False) == "Her."


def test_noncommittal_detection() -> None:
    assert W.noncommittal("The launch date has not been provided.")
    assert W.noncommittal("It was founded in 2016, but I do not have information about the location.")
    assert W.noncommittal("The taxonomy is currently unknown.")
    assert not W.noncommittal("Christopher Nolan directed the film. It is not a sequel.")


@needs_data
def test_data_file_reads_all_rows() -> None:
    rows = W.load_wikieval(DATA)
    assert len(rows) == 50
    assert all(not r.question.startswith("Question:") and not r.answer.startswith("Answer:") for r in rows)
    assert all(r.context and not r.context.startswith("[") and not r.poor_answer.endswith("'") for r in rows)
    assert rows[0].answer.startswith("The PSLV-C56 mission is scheduled")


# --------------------------------------------------------------------------------------------- the command


@needs_data
def test_wikieval_runs_without_an_llm_and_writes_the_report(tmp_path: Path, bag_of_words, capsys) -> None:
    assert run_experiment(["--data", str(DATA.parent.parent), "--out", str(tmp_path), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| paper: Ragas | 0.95 |" in printed and "| paper: GPT Ranking | 0.40 |" in printed
    assert "No judge endpoint given" in printed

    report = json.loads((tmp_path / "report.json").read_text())
    assert report["rows"] == 50 and report["embedder"] == "bag-of-words"
    agreement = report["agreement"]
    assert set(agreement) == {"faithfulness", "answer_relevance"}
    names = {s.name for s in W.SIGNALS}
    assert set(agreement["faithfulness"]) == names | {"ragtap_verdict"} and set(agreement["answer_relevance"]) == names
    assert all(0.0 <= v <= 1.0 for task in agreement.values() for v in task.values())
    # embedder-independent figures (docs/judge.md)
    assert agreement["faithfulness"]["lexical_precision"] == 0.99
    assert agreement["answer_relevance"]["lexical_f1"] == 0.96
    assert agreement["answer_relevance"]["length"] == 0.70
    assert report["llm_calls_per_row"]["faithfulness"]["ard"] == 0
    assert report["paper"]["answer_relevance"]["Ragas"] == 0.78
    assert (tmp_path / "report.md").read_text().startswith("# WikiEval agreement")


@needs_data
def test_wikieval_limit_and_bad_data_path(tmp_path: Path, bag_of_words, capsys) -> None:
    assert run_experiment(["--data", str(DATA), "--limit", "5", "--quiet"]) == 0  # the .jsonl itself is accepted
    assert "5 rows from" in capsys.readouterr().out
    assert run_experiment(["--data", str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "no WikiEval file" in capsys.readouterr().err


def careful_judge(body: dict) -> ScriptedReply:
    """A scripted judge that reasons a little: a statement is supported when most of its content words are in
    the context; an answer is noncommittal when it hedges (so Ragas prefers the right candidate)."""
    kind = prompt_kind(body)
    text = user_text(body)
    if kind == VERIFY:
        context = set(W.content_words(_section(text, "context", ["statement 1:"])))
        verdicts = []
        for statement in _STATEMENT_LINE.findall(text):
            words = W.content_words(statement)
            supported = sum(w in context for w in words) >= 0.8 * max(1, len(words))
            verdicts.append({"statement": statement, "reason": "word check", "verdict": "Yes" if supported else "No"})
        return ScriptedReply(json.dumps({"verdicts": verdicts}))
    if kind == QUESTIONS:
        answer = _section(text, "answer")
        return ScriptedReply(json.dumps({"questions": [answer.split(".")[0] + "?"] * 3, "noncommittal": int(W.noncommittal(answer))}))
    return generic_ragas_script()(body)


@needs_data
async def test_wikieval_with_a_scripted_judge(tmp_path: Path, bag_of_words, capsys) -> None:
    import asyncio

    async with ScriptedUpstream(careful_judge) as upstream:
        argv = ["--data", str(DATA), "--limit", "6", "--out", str(tmp_path), "--judge-url", upstream.base_url,
                "--judge-model", "scripted-judge", "--cache", str(tmp_path / "cache.jsonl"), "--quiet"]
        assert await asyncio.to_thread(run_experiment, argv) == 0
        first = len(upstream.requests)
        assert first == 6 * (4 + 2)  # faithfulness: 2 calls per candidate; answer relevance: 1 per candidate
        assert await asyncio.to_thread(run_experiment, argv) == 0  # the cache makes a rerun free
        assert len(upstream.requests) == first
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["llm_calls_per_row"]["faithfulness"]["ragas_faithfulness"] == 4
    assert report["llm_calls_per_row"]["answer_relevance"]["ragas_answer_relevance"] == 2
    assert report["agreement"]["faithfulness"]["ragas_faithfulness"] >= 0.5
    assert report["judge"]["model"] == "scripted-judge" and report["judge"]["null_scores"] == {"faithfulness": 0, "answer_relevance": 0}
    assert "Judge `scripted-judge`" in (tmp_path / "report.md").read_text()
    assert {prompt_kind(r.body) for r in upstream.requests} == {STATEMENTS, VERIFY, QUESTIONS}


@pytest.mark.slow
@needs_data
@pytest.mark.skipif(os.environ.get("RAGTAP_WIKIEVAL_FULL") != "1", reason="set RAGTAP_WIKIEVAL_FULL=1 (embeds ~3,000 texts with MiniLM)")
def test_wikieval_minilm_figures(tmp_path: Path) -> None:
    assert run_experiment(["--data", str(DATA), "--out", str(tmp_path), "--quiet"]) == 0
    agreement = json.loads((tmp_path / "report.json").read_text())["agreement"]
    assert agreement["faithfulness"]["ard"] == 0.74  # the brief: plain cosine prefers the grounded answer in 74% of rows
    assert agreement["answer_relevance"]["qa_raw"] == 0.34  # ...and raw QA prefers the incomplete answer in 66%
    assert agreement["answer_relevance"][W.RECOMMENDED] >= 0.85
