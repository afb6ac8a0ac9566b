"""The experiments end to end over real HTTP: ragtap's proxy in-process, the scripted upstream on 127.0.0.1,
the openai SDK in between, the real all-MiniLM-L6-v2 embedder.  Datasets are tiny fixtures written here (the
MIRAGE questions come from ../shared/data when present); nothing from the shared data is copied into the repo.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtap.config import Config, load_config
from ragtap.evaluation import common, stats
from ragtap.evaluation.experiments import mirage, squad2
from ragtap.evaluation.datasets import DatasetError, load_cloud_faq, load_pool, load_squad2, load_wikieval, resolve_data_dir
from ragtap.evaluation.generate import GenerationSettings
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply, was_injected

from conftest import use_embedder

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    from ragtap.embedding.factory import make_embedder

    return make_embedder("minilm")


@contextmanager
def upstream_thread(script: Callable[[dict[str, Any]], ScriptedReply]) -> Iterator[ScriptedUpstream]:
    """The scripted upstream on its own event loop in a thread (the experiments run their own asyncio.run)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    upstream = ScriptedUpstream(script)

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(upstream.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield upstream
    finally:
        asyncio.run_coroutine_threadsafe(upstream.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def chat_requests(upstream: ScriptedUpstream) -> list[dict[str, Any]]:
    return [r.body for r in upstream.requests if r.path.endswith("/chat/completions")]


def question_of(body: dict[str, Any]) -> str:
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    match = re.search(r"Question: (.*)$", user, re.S)
    return match.group(1).strip() if match else user.strip()


def settings(url: str, **kw: Any) -> GenerationSettings:
    return GenerationSettings(upstream=url, model="scripted-gpt", api_key="sk-test-key", concurrency=4, retries=3, backoff_s=0.01, timeout_s=30, score_wait_s=60, **kw)


# ------------------------------------------------------------------------------------------- SQuAD 2.0

ARTICLES = {
    "Volcanoes": [
        (
            "Mount Etna is an active volcano on the east coast of Sicily. It is the tallest active volcano in Europe outside the Caucasus. "
            "Etna erupts frequently and its lava flows have shaped the nearby city of Catania.",
            [
                ("Where is Mount Etna?", "on the east coast of Sicily", False),
                ("Which city was shaped by Etna's lava flows?", "Catania", False),
                ("When did Etna last erupt in the Middle Ages?", None, True),
            ],
        ),
        (
            "Krakatoa is a caldera in the Sunda Strait. Its 1883 eruption was one of the deadliest in recorded history. "
            "The explosion was heard thousands of kilometres away.",
            [
                ("In which strait is Krakatoa?", "the Sunda Strait", False),
                ("In what year did Krakatoa erupt catastrophically?", "1883", False),
                ("Who first climbed Krakatoa?", None, True),
            ],
        ),
    ],
    "Bicycles": [
        (
            "The safety bicycle was developed in the 1880s. It had two wheels of equal size and a chain drive to the rear wheel. "
            "Pneumatic tyres were added soon after by John Boyd Dunlop.",
            [
                ("When was the safety bicycle developed?", "the 1880s", False),
                ("Who added pneumatic tyres?", "John Boyd Dunlop", False),
                ("How much did the first safety bicycle cost?", None, True),
            ],
        ),
        (
            "Bicycle frames are usually made of steel, aluminium or carbon fibre. Carbon fibre frames are light but expensive. "
            "Steel frames are durable and easy to repair.",
            [
                ("Which frames are light but expensive?", "Carbon fibre frames", False),
                ("Why are steel frames popular?", "durable and easy to repair", False),
                ("Which company invented the carbon frame?", None, True),
                ("What colour were the first aluminium frames?", None, True),
            ],
        ),
    ],
}


def write_squad(data_dir: Path) -> dict[str, tuple[str | None, str]]:
    """A SQuAD 2.0 file with 8 answerable and 5 unanswerable questions; returns question -> (span or None, paragraph)."""
    data = []
    index: dict[str, tuple[str | None, str]] = {}
    n = 0
    for title, paragraphs in ARTICLES.items():
        out = []
        for context, qas in paragraphs:
            items = []
            for question, span, impossible in qas:
                n += 1
                answers = [] if impossible else [{"text": span, "answer_start": context.index(span)}]
                items.append({"question": question, "id": f"q{n:03d}", "answers": answers, "is_impossible": impossible})
                index[question] = (span, context)
            out.append({"context": context, "qas": items})
        data.append({"title": title, "paragraphs": out})
    path = data_dir / "squad2" / "dev-v2.0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": "v2.0", "data": data}))
    return index


def squad_script(index: dict[str, tuple[str | None, str]], flaky: dict[str, list[ScriptedReply]]) -> Callable[[dict[str, Any]], ScriptedReply]:
    def script(body: dict[str, Any]) -> ScriptedReply:
        question = question_of(body)
        if flaky.get(question):
            return flaky[question].pop(0)
        assert was_injected(body), "ragtap must inject its instruction into every RAG request"
        span, context = index[question]
        if span is None:  # unanswerable: the model writes its own support
            return ScriptedReply(json_reply("It was probably in the nineteenth century.", "From general knowledge, such events were common then."))
        sentence = next(s for s in re.split(r"(?<=\.) ", context) if span in s)
        return ScriptedReply(json_reply(f"{question.rstrip('?')}: {span}.", sentence))

    return script


def test_squad2_end_to_end_with_retries_and_resume(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    data_dir = tmp_path / "data"
    index = write_squad(data_dir)
    flaky = {
        "Where is Mount Etna?": [ScriptedReply(status=500)],
        "Who added pneumatic tyres?": [ScriptedReply(status=429, headers={"retry-after": "0"}), ScriptedReply(status=503)],
    }
    out = tmp_path / "out"
    with upstream_thread(squad_script(index, flaky)) as upstream:
        options = common.RunOptions(data_dir=data_dir, out_dir=out, config=Config(), limit=12, seed=3, generation=settings(upstream.base_url), quiet=True)
        data = squad2.run(options, embedder)
        first = chat_requests(upstream)
        headers = [r.headers for r in upstream.requests]

        # 12 questions: round(12 * 493/1485) = 4 unanswerable
        assert data["n"] == 12 and data["positives"] == 4
        assert len(first) == 12 + 3  # three scripted failures, each retried
        for body in first:
            assert "ragtap" not in body  # ragtap's own field never reaches the upstream
        assert all(h.get("Authorization") == "Bearer sk-test-key" for h in headers)
        records = [json.loads(line) for line in (out / "scored.jsonl").read_text().splitlines()]
        assert len(records) == 12
        by_q = {r["question"]: r for r in records}
        assert by_q["Who added pneumatic tyres?"]["attempts"] == 3
        assert by_q["Where is Mount Etna?"]["attempts"] == 2
        for r in records:
            assert r["label"] == r["is_impossible"]
            assert r["supporting"] and r["verdict"] in {"grounded", "parametric", "refusal", "unsupported_answer"}
            assert all(r["scores"][m] is not None for m in ("sdq", "sdrd", "sda", "qrd", "qa", "ard"))
            assert not r["answer"].lstrip().startswith("{")  # the app's answer, split from ragtap's JSON

        # the report's numbers agree with an independent computation from scored.jsonl
        y = np.array([r["label"] for r in records])
        primary = np.array([min(r["scores"][m] for m in ("sdq", "sdrd", "sda")) for r in records])
        assert data["auc"]["primary"] == pytest.approx(stats.auc(y, -primary))
        assert set(data["auc"]) >= {"qrd", "sdq", "sdrd", "sda", "qa", "ard", "primary", "primary+qrd", "primary+qa"}
        row = next(r for r in data["threshold_table"] if r["rule"] == "primary" and r["threshold"] == 0.8)
        c = stats.confusion(y, primary < 0.8)
        assert (row["tp"], row["fp"], row["tn"], row["fn"]) == (c.tp, c.fp, c.tn, c.fn)
        assert data["random_baseline"]["precision"] == pytest.approx(4 / 12)
        for name in ("report.md", "report.json", "roc.png", "f1_f2.png", "flag_share.png"):
            assert (out / name).is_file(), name
        saved = json.loads((out / "report.json").read_text())
        assert saved["n"] == 12 and saved["positives"] == 4 and saved["auc"]["primary"] == pytest.approx(data["auc"]["primary"])
        assert "| 0.80 | primary |" in (out / "report.md").read_text()

        # a rerun sends nothing: every answer is in the cache
        options = dataclasses.replace(options, plots=False)
        again = squad2.run(options, embedder)
        assert len(chat_requests(upstream)) == len(first)
        assert again["auc"] == data["auc"]

        # drop three answers from the cache (and tear the last line): only those are sent again
        cache = out / "generations.jsonl"
        lines = cache.read_text().splitlines()
        cache.write_text("\n".join(lines[:-3]) + "\n" + lines[-3][:20])
        squad2.run(options, embedder)
        assert len(chat_requests(upstream)) == len(first) + 3


def test_squad2_no_llm_scores_qrd_only(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    data_dir = tmp_path / "data"
    write_squad(data_dir)
    options = common.RunOptions(data_dir=data_dir, out_dir=tmp_path / "out", config=Config(), limit=9, seed=0, no_llm=True, quiet=True, plots=False)
    data = squad2.run(options, embedder)
    assert data["n"] == 9 and data["positives"] == 3
    assert data["auc"]["qrd"] is not None and data["auc"]["primary"] is None
    records = [json.loads(line) for line in (tmp_path / "out" / "scored.jsonl").read_text().splitlines()]
    assert all(r["scores"]["sdq"] is None and r["scores"]["qrd"] is not None for r in records)


# ------------------------------------------------------------------------------------------- cloud FAQ

AWS = [
    ("what is amazon s3?", "amazon s3 is object storage built to store and retrieve any amount of data from anywhere"),
    ("how do i resize an ec2 instance?", "stop the instance, change its instance type in the console, then start it again"),
    ("what is aws lambda?", "aws lambda lets you run code without provisioning or managing servers, paying only for compute time"),
    ("can i encrypt data in amazon s3?", "yes, s3 encrypts objects at rest with server-side encryption using aws kms or s3 managed keys"),
    ("what is amazon rds?", "amazon rds is a managed relational database service for mysql, postgresql, mariadb, oracle and sql server"),
    ("how are lambda functions billed?", "you are charged for the number of requests and the duration your code runs, in milliseconds"),
    ("what is amazon cloudfront?", "cloudfront is a content delivery network that caches content at edge locations close to viewers"),
    ("does dynamodb support transactions?", "yes, dynamodb transactions provide atomicity across multiple items and tables"),
    ("what is amazon sqs?", "amazon sqs is a fully managed message queue for decoupling microservices and distributed systems"),
    ("how do i back up an rds database?", "rds takes automated daily snapshots and keeps transaction logs for point-in-time recovery"),
    ("what is amazon route 53?", "route 53 is a highly available dns web service that routes users to internet applications"),
    ("can ec2 instances use gpus?", "yes, p and g instance families provide nvidia gpus for machine learning and graphics workloads"),
]
OTHERS = [
    ("ibm", "how do i create a webhook?", "to define a webhook go to the live environment page and open the settings"),
    ("ibm", "what regions are bare metal servers for vpc available?", "bare metal servers for vpc are available in dallas, frankfurt and tokyo"),
    ("ibm", "can i install my own hadoop stack components?", "no, you cannot add components that are not supported by ibm analytics engine"),
    ("ibm", "what is ibm watson assistant?", "watson assistant lets you build conversational interfaces into any application"),
    ("ibm", "how is cloudant billed?", "cloudant is billed by provisioned throughput capacity and storage used"),
    ("gcp", "what is bigquery?", "bigquery is a serverless data warehouse for analytics over petabytes"),
    ("gcp", "how do i enable cloud armor?", "attach a cloud armor security policy to a backend service of an external load balancer"),
    ("gcp", "what is anthos?", "anthos is a platform for managing applications across hybrid and multi-cloud environments"),
    ("gcp", "does spanner support sql?", "yes, cloud spanner supports a google standard sql dialect and postgresql interface"),
    ("hetzner", "where are hetzner data centres?", "in germany, finland and the usa"),
]


def write_faq(data_dir: Path) -> None:
    path = data_dir / "cloud_faq" / "cloud_faq_dataset.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"source": "aws", "filename": "faq", "question": q, "answer": a} for q, a in AWS]
    rows += [{"source": s, "filename": None, "question": q, "answer": a} for s, q, a in OTHERS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def faq_script(body: dict[str, Any]) -> ScriptedReply:
    question = question_of(body)
    docs = body["messages"][1]["content"].split("\n\n")[1]
    doc = re.sub(r"^\[\d+\] ", "", docs)
    if question.lower().startswith("in "):  # "In ibm service, ...": the thesis's example 4, a refusal
        return ScriptedReply(json_reply("No information available in the retrieved document.", "The retrieved document does not mention this service."))
    return ScriptedReply(json_reply(f"According to the documents, {doc}.", doc))


def test_cloud_faq_end_to_end_through_the_cli(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragtap import cli

    data_dir = tmp_path / "data"
    write_faq(data_dir)
    use_embedder(monkeypatch, embedder)
    monkeypatch.setenv("RAGTAP_TEST_KEY", "sk-from-env")
    out = tmp_path / "out"
    with upstream_thread(faq_script) as upstream:
        argv = ["experiment", "cloud-faq", "--data", str(data_dir), "--out", str(out), "--limit", "12", "--upstream", upstream.base_url,
                "--api-key-env", "RAGTAP_TEST_KEY", "--index-cache", str(tmp_path / "idx"), "--top-k", "2", "--quiet"]
        assert cli.main(argv) == 0
        bodies = chat_requests(upstream)
        assert len(bodies) == 12
        assert {r.headers.get("Authorization") for r in upstream.requests} == {"Bearer sk-from-env"}
    printed = capsys.readouterr().out
    assert "AUC:" in printed and "retrieval hit rate" in printed
    data = json.loads((out / "report.json").read_text())
    # 12 questions: round(12 * 247/400) = 7 gcp/ibm, 5 aws
    assert data["n"] == 12 and data["positives"] == 7
    assert data["retrieval"]["answerable_questions"] == 5
    assert data["retrieval"]["corpus_size"] == len(AWS)
    assert data["retrieval"]["index_from_cache"] is False
    records = [json.loads(line) for line in (out / "scored.jsonl").read_text().splitlines()]
    assert all(len(r["documents"]) == 2 for r in records)
    for r in records:
        if r["source"] != "aws":
            assert r["question"].startswith(f"In {r['source']} service, ")
            assert r["verdict"] == "refusal"
    # hit rate by hand from each aws question's rank of its own answer
    ranks = [r["own_answer_rank"] for r in records if r["source"] == "aws"]
    assert data["retrieval"]["hit_rate"]["1"] == pytest.approx(np.mean([k == 1 for k in ranks]))
    assert data["retrieval"]["hit_rate"]["3"] == pytest.approx(np.mean([k is not None and k <= 3 for k in ranks]))
    # the index is cached on disk, keyed by embedder and data: a --no-llm rerun loads it
    assert cli.main(["experiment", "cloud-faq", "--data", str(data_dir), "--out", str(tmp_path / "nollm"), "--limit", "12", "--no-llm",
                     "--index-cache", str(tmp_path / "idx"), "--quiet", "--no-plots"]) == 0
    nollm = json.loads((tmp_path / "nollm" / "report.json").read_text())
    assert nollm["retrieval"]["index_from_cache"] is True
    assert nollm["auc"]["qrd"] == pytest.approx(data["auc"]["qrd"])
    assert nollm["auc"]["primary"] is None


# ---------------------------------------------------------------------------------------------- MIRAGE

FALLBACK_MIRAGE = [
    {"source": "popqa", "query_id": "m1", "query": "What is John Mayne's occupation?", "doc_name": "John Mayne", "answer": ["journalist", "journo"]},
    {"source": "popqa", "query_id": "m2", "query": "What is Kathy Saltzman's occupation?", "doc_name": "Kathy Saltzman", "answer": ["politician"]},
    {"source": "popqa", "query_id": "m3", "query": "What is Eleanor Davis's occupation?", "doc_name": "Eleanor Davis", "answer": ["cartoonist", "illustrator"]},
    {"source": "popqa", "query_id": "m4", "query": "In what country is Chalkhi?", "doc_name": "Chalkhi", "answer": ["Iran"]},
    {"source": "popqa", "query_id": "m5", "query": "Who was the producer of The Ant Bully?", "doc_name": "The Ant Bully (film)", "answer": ["Tom Hanks"]},
    {"source": "popqa", "query_id": "m6", "query": "What genre is Spellbound?", "doc_name": "Spellbound (band)", "answer": ["rock"]},
]


def mirage_questions() -> list[dict[str, Any]]:
    """Five real MIRAGE questions when ../shared/data is present (read, not copied), else look-alikes."""
    path = SHARED / "mirage" / "dataset.json"
    if path.is_file():
        rows = json.loads(path.read_text())
        chosen, names = [], set()
        for row in rows:
            if row["doc_name"] not in names and len(row["answer"]) >= 1:
                chosen.append(row)
                names.add(row["doc_name"])
            if len(chosen) == 6:
                break
        return chosen
    return FALLBACK_MIRAGE


def test_mirage_end_to_end(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    questions = mirage_questions()
    data_dir = tmp_path / "data"
    (data_dir / "mirage").mkdir(parents=True)
    (data_dir / "mirage" / "dataset.json").write_text(json.dumps(questions))
    # the pool: one or two gold chunks per question (fake text that holds the first alias), plus noise chunks;
    # the sixth question gets no chunk, so it is left out
    pool = []
    for i, q in enumerate(questions[:5]):
        pool.append({"doc_name": q["doc_name"], "text": f"{q['doc_name']} is known for this: {q['answer'][0]}. {q['query']}"})
        if i % 2 == 0:
            pool.append({"doc_name": q["doc_name"], "text": f"{q['doc_name']} was born or founded a long time ago."})
    pool += [{"doc_name": f"Noise {n}", "text": text} for n, text in enumerate(
        ["The Pacific Ocean is the largest ocean.", "Basalt is a volcanic rock.", "A sonnet has fourteen lines.", "Copper conducts electricity well."])]
    pool_path = tmp_path / "pool.jsonl"
    pool_path.write_text("".join(json.dumps(c) + "\n" for c in pool))
    gold_of = {q["query"]: {c["text"] for c in pool if c["doc_name"] == q["doc_name"]} for q in questions}

    # planned outcomes (base, oracle, mixed) for the five usable questions
    plan = {q["query"]: outcome for q, outcome in zip(questions[:5], [(0, 1, 1), (1, 1, 0), (0, 1, 0), (0, 0, 0), (1, 0, 1)])}
    alias = {q["query"]: q["answer"][0] for q in questions}

    def script(body: dict[str, Any]) -> ScriptedReply:
        question = question_of(body)
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if not was_injected(body):
            assert "Retrieved documents" not in user
            right = plan[question][0]
            return ScriptedReply(f"The answer is {alias[question]}." if right else "The answer is unclear.")
        docs = [re.sub(r"^\[\d+\] ", "", d) for d in user.split("Question:")[0].split("\n\n")[1:] if d.strip()]
        variant = 1 if all(d in gold_of[question] for d in docs) else 2  # oracle: its own gold chunks only
        right = plan[question][variant]
        answer = f"It is {alias[question]}." if right else "It is something else entirely."
        return ScriptedReply(json_reply(answer, docs[0]))

    out = tmp_path / "out"
    with upstream_thread(script) as upstream:
        options = common.RunOptions(data_dir=data_dir, out_dir=out, config=Config(), seed=0, generation=settings(upstream.base_url),
                                    index_cache_dir=tmp_path / "idx", top_k=3, quiet=True, plots=False)
        data = mirage.run(options, embedder, pool_path=pool_path)
        assert len(chat_requests(upstream)) == 15  # 5 questions x base, oracle, mixed
    assert data["n"] == 5 and data["questions_without_gold_in_pool"] == len(questions) - 5
    a = data["adaptability"]
    # by hand: G011 + G111 -> acceptability 1/5; G110 + G010 -> vulnerability 2/5; G000 -> insensitivity 1/5;
    # G101 -> misinterpretation 1/5
    assert a["context_acceptability"] == pytest.approx(1 / 5)
    assert a["noise_vulnerability"] == pytest.approx(2 / 5)
    assert a["context_insensitivity"] == pytest.approx(1 / 5)
    assert a["context_misinterpretation"] == pytest.approx(1 / 5)
    assert a["sum"] == pytest.approx(1.0)
    assert a["accuracy"] == {"base": pytest.approx(2 / 5), "oracle": pytest.approx(3 / 5), "mixed": pytest.approx(2 / 5)}
    # Every gold chunk ranks above every other chunk for its question (the first holds the question's text, the
    # second its document's name): so each figure follows from the gold counts alone (2, 1, 2, 1, 2 chunks).
    golds = [len(gold_of[q["query"]]) for q in questions[:5]]
    for k in (1, 3, 5):
        r = data["retrieval"][str(k)]
        assert r["precision"] == pytest.approx(sum(min(g, k) / k for g in golds) / 5), k
        assert r["recall"] == pytest.approx(sum(min(g, k) / g for g in golds) / 5), k
        assert r["ndcg"] == pytest.approx(1.0) and r["hit"] == 1.0, k
    # every question's text is inside one of its gold chunks: the retriever finds it first
    assert data["retrieval"]["1"]["hit"] == 1.0
    assert data["retrieval"]["1"]["precision"] == 1.0
    records = [json.loads(line) for line in (out / "scored.jsonl").read_text().splitlines()]
    assert sorted({r["variant"] for r in records}) == ["base", "mixed", "oracle"]
    assert (out / "report.md").read_text().count("noise vulnerability") >= 1


# ------------------------------------------------------------------------------------- loaders' messages


def test_loaders_name_the_file_and_the_problem(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"squad2/dev-v2.0.json: file not found"):
        load_squad2(tmp_path)
    (tmp_path / "squad2").mkdir()
    (tmp_path / "squad2" / "dev-v2.0.json").write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [{"question": "q", "id": "1", "answers": []}]}]}]}))
    with pytest.raises(DatasetError, match=r"dev-v2.0.json: data\[0\].paragraphs\[0\].qas\[0\]: 'is_impossible'.*SQuAD 1.1"):
        load_squad2(tmp_path)
    (tmp_path / "cloud_faq").mkdir()
    (tmp_path / "cloud_faq" / "cloud_faq_dataset.jsonl").write_text('{"source": "aws", "question": "q", "answer": "a"}\n{"source": "aws", "question": "q"}\n')
    with pytest.raises(DatasetError, match=r"cloud_faq_dataset.jsonl:2: missing field 'answer'"):
        load_cloud_faq(tmp_path)
    (tmp_path / "wikieval").mkdir()
    (tmp_path / "wikieval" / "wikieval.jsonl").write_text("{not json\n")
    with pytest.raises(DatasetError, match=r"wikieval.jsonl:1: not valid JSON"):
        load_wikieval(tmp_path)
    (tmp_path / "pool.jsonl").write_text('{"doc_name": "x"}\n')
    with pytest.raises(DatasetError, match=r"pool.jsonl:1: missing field 'text'"):
        load_pool(tmp_path / "pool.jsonl")
    with pytest.raises(DatasetError, match="RAGTAP_DATA=/nonexistent"):
        resolve_data_dir(None, {"RAGTAP_DATA": "/nonexistent"})
    assert resolve_data_dir(str(tmp_path)) == tmp_path


def test_cli_reports_a_bad_data_dir(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragtap import cli

    assert cli.main(["experiment", "squad2", "--no-llm", "--data", str(tmp_path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "squad2/dev-v2.0.json: file not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- real data, CI-sized subset


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "cloud_faq" / "cloud_faq_dataset.jsonl").is_file(), reason="../shared/data is not present")
def test_cloud_faq_no_llm_on_a_subset_of_the_real_data(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The real FAQ rows, cut down in a temporary directory (120 aws answers indexed), through the CLI."""
    from ragtap import cli

    rows = [json.loads(line) for line in (SHARED / "cloud_faq" / "cloud_faq_dataset.jsonl").read_text().splitlines()]
    aws = [r for r in rows if r["source"] == "aws"][:120]
    others = [r for r in rows if r["source"] in ("gcp", "ibm")][::40][:60]
    (tmp_path / "cloud_faq").mkdir()
    (tmp_path / "cloud_faq" / "cloud_faq_dataset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in aws + others))
    use_embedder(monkeypatch, embedder)
    out = tmp_path / "out"
    assert cli.main(["experiment", "cloud-faq", "--no-llm", "--data", str(tmp_path), "--out", str(out), "--limit", "40",
                     "--no-index-cache", "--quiet", "--no-plots"]) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["n"] == 40 and data["positives"] == 25
    assert data["auc"]["qrd"] > 0.8  # off-platform questions are far from the aws answers
    assert data["retrieval"]["hit_rate"]["10"] >= data["retrieval"]["hit_rate"]["1"] > 0.3
    # and the output calibrates: a QRD-only [thresholds] table that load_config accepts
    fragment = tmp_path / "thresholds.toml"
    assert cli.main(["calibrate", str(out / "scored.jsonl"), "--label", "label", "--write", str(fragment)]) == 0
    config = load_config(fragment)
    assert 0.2 < config.thresholds.qrd < 0.95
    assert config.thresholds.sdq == Config().thresholds.sdq  # absent from the data: left at the default
