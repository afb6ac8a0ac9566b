"""Tests for ragtap.judge: the Ragas formulas on hand-computed fixtures, reply parsing, the sentence splitter,
the judge over real HTTP against a scripted judge endpoint (retries, malformed replies), and `ragtap judge`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from ragtap.judge import Judge, JudgeClient, JudgeEndpoint, answer_relevance_score, context_relevance_score, faithfulness_score
from ragtap.judge.parse import MalformedReply, as_flag, extract_json
from ragtap.judge.ragas import parse_extraction, parse_verdicts, prompt_messages, render
from ragtap.scoring.sentences import split_sentences
from ragtap.testing.judge import EXTRACT, QUESTIONS, STATEMENTS, VERIFY, Fixture, fixture_script, generic_ragas_script, prompt_kind
from ragtap.testing.upstream import ScriptedUpstream

from conftest import use_embedder

# --------------------------------------------------------------------------------------- fixtures (by hand)

QUESTION_A = "Who directed the film Oppenheimer and who plays the lead?"
DOCS_A = [
    "Oppenheimer is a 2023 film written and directed by Christopher Nolan.",
    "Cillian Murphy stars as J. Robert Oppenheimer. The film was released in July 2023. It grossed $975 million.",
]  # 4 sentences ("J. Robert" is an initial, not a sentence end)
ANSWER_A = "Christopher Nolan directed Oppenheimer. Tom Cruise plays the lead."
STATEMENTS_A = ["Christopher Nolan directed Oppenheimer.", "Tom Cruise plays the lead in Oppenheimer.", "Oppenheimer is a film."]
GENERATED_A = ["Who directed Oppenheimer and who is its lead actor?", "Which director made Oppenheimer?", "Who starred in Oppenheimer?"]
# F = 2/3 (Yes, No, Yes); AR = (1.0 + 0.6 + 0.8) / 3 = 0.8; CR = 2 extracted / 4 sentences = 0.5

QUESTION_B = "When was the PSLV-C56 mission launched?"
DOCS_B = ["The PSLV-C56 launched on 30 July 2023 from Sriharikota."]
ANSWER_B = "I'm not sure when it was launched."
# F = 0/1; AR = 0 (noncommittal); CR = 0 (Insufficient Information)

QUESTION_C = "What does PharmaCann sell?"
DOCS_C = ["PharmaCann was founded in 2014. It is headquartered in Illinois. It sells cannabis products."]
ANSWER_C = "PharmaCann sells medical cannabis."
# statements reply without JSON -> faithfulness null; questions without noncommittal -> null;
# extraction in a code fence with prose around -> parsed: 1 / 3


class TableEmbedder:
    """Unit vectors chosen by hand for the fixture texts (cosines 1.0, 0.6, 0.8 with QUESTION_A)."""

    name = "table"
    dim = 3
    TABLE = {
        QUESTION_A: [1.0, 0.0, 0.0],
        GENERATED_A[0]: [1.0, 0.0, 0.0],
        GENERATED_A[1]: [0.6, 0.8, 0.0],
        GENERATED_A[2]: [0.8, 0.0, 0.6],
    }

    def embed(self, texts):
        return np.array([self.TABLE.get(t, [0.0, 0.0, 1.0]) for t in texts], dtype=np.float32)


FIXTURES = [
    Fixture(
        match=[ANSWER_A, "Tom Cruise plays the lead", QUESTION_A],
        replies={
            STATEMENTS: {"statements": STATEMENTS_A},
            VERIFY: {"verdicts": [
                {"statement": STATEMENTS_A[0], "reason": "the context says Nolan directed it", "verdict": "Yes"},
                {"statement": STATEMENTS_A[1], "reason": "the context names Cillian Murphy", "verdict": "No"},
                {"statement": STATEMENTS_A[2], "reason": "a 2023 film", "verdict": "Yes"},
            ]},
            QUESTIONS: {"questions": GENERATED_A, "noncommittal": 0},
            EXTRACT: {"sentences": [DOCS_A[0], "Cillian Murphy stars as J. Robert Oppenheimer."]},
        },
    ),
    Fixture(
        match=[ANSWER_B, "is not sure when", QUESTION_B],
        replies={
            STATEMENTS: {"statements": ["The speaker is not sure when the PSLV-C56 was launched."]},
            VERIFY: '{"verdicts": [{"statement": "The speaker is not sure", "reason": "not in the context", "verdict": "No"}]}',
            QUESTIONS: {"questions": ["When was it launched?"], "noncommittal": 1},
            EXTRACT: "Insufficient Information",
        },
    ),
    Fixture(
        match=[ANSWER_C, QUESTION_C],
        replies={
            STATEMENTS: "Sure! The statements are: PharmaCann sells medical cannabis.",
            QUESTIONS: {"questions": ["What does PharmaCann sell?"]},
            EXTRACT: 'Here you go:\n```json\n{"sentences": ["It sells cannabis products."],}\n```\nHope this helps.',
        },
    ),
]


def endpoint(base_url: str, **overrides) -> JudgeEndpoint:
    options = {"model": "judge-test", "backoff_base_s": 0.001, "backoff_max_s": 0.01, "max_retries": 3}
    options.update(overrides)
    return JudgeEndpoint(base_url=base_url, **options)


# ------------------------------------------------------------------------------------------------ formulas


def test_faithfulness_formula() -> None:
    assert faithfulness_score([1, 0, 1]) == pytest.approx(2 / 3)
    assert faithfulness_score([0]) == 0.0
    assert faithfulness_score([1, 1]) == 1.0
    assert faithfulness_score([]) is None


def test_answer_relevance_formula() -> None:
    q = np.array([1.0, 0.0, 0.0])
    generated = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.8, 0.0, 0.6]])
    assert answer_relevance_score(q, generated, noncommittal=False) == pytest.approx(0.8)
    assert answer_relevance_score(q, generated, noncommittal=True) == 0.0
    assert answer_relevance_score(q, np.zeros((0, 3)), noncommittal=False) is None


def test_context_relevance_formula() -> None:
    assert context_relevance_score(2, 4) == 0.5
    assert context_relevance_score(0, 4) == 0.0
    assert context_relevance_score(9, 4) == 1.0  # capped: a judge cannot extract more than there is
    assert context_relevance_score(1, 0) is None


# ------------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "reply",
    [
        '{"statements": ["a", "b"]}',
        '```json\n{"statements": ["a", "b"]}\n```',
        'Here are the statements:\n{"statements": ["a", "b"]}\nLet me know!',
        '{"statements": ["a", "b",],}',
        'Sure. ```\n{"statements": ["a", "b"]}```',
    ],
)
def test_extract_json_tolerates_fences_prose_and_trailing_commas(reply: str) -> None:
    assert extract_json(reply) == {"statements": ["a", "b"]}


@pytest.mark.parametrize("reply", ["", "   ", "I cannot do that.", "{not json at all"])
def test_extract_json_rejects_replies_without_json(reply: str) -> None:
    with pytest.raises(MalformedReply):
        extract_json(reply)


def test_verdict_parsing_is_strict_about_count_and_values() -> None:
    assert parse_verdicts('{"verdicts": [{"verdict": "Yes"}, {"verdict": "no"}, {"verdict": 1}]}', 3) == [1, 0, 1]
    assert parse_verdicts('["Yes", "No"]', 2) == [1, 0]
    with pytest.raises(MalformedReply, match="2 verdicts for 3 statements"):
        parse_verdicts('{"verdicts": [{"verdict": "Yes"}, {"verdict": "No"}]}', 3)
    with pytest.raises(MalformedReply, match="not Yes/No"):
        parse_verdicts('{"verdicts": [{"verdict": "Maybe"}]}', 1)


def test_extraction_parsing_and_insufficient_information() -> None:
    assert parse_extraction('{"sentences": ["A.", "B."]}') == ["A.", "B."]
    assert parse_extraction('{"sentences": "Insufficient Information"}') is None
    assert parse_extraction('{"sentences": ["Insufficient Information."]}') is None
    assert parse_extraction("Insufficient Information") is None
    assert parse_extraction('{"sentences": []}') is None
    with pytest.raises(MalformedReply):
        parse_extraction("I found nothing useful.")


def test_flags() -> None:
    assert [as_flag(v) for v in (0, 1, True, "Yes", "no", "1", "maybe", 2)] == [0, 1, 1, 1, 0, 1, None, None]


def test_render_fills_placeholders_once_and_keeps_json_braces() -> None:
    text = render('{"a": 1} q={question} a={answer}', {"question": "has {answer} inside", "answer": "A"})
    assert text == '{"a": 1} q=has {answer} inside a=A'


def test_prompts_carry_the_paper_wording_and_ask_for_json() -> None:
    system, user = prompt_messages("ragas_verify", context="C", statements="statement 1: s")
    assert "determine whether they are supported by the information present in the context" in system
    assert "JSON" in system and "statement 1: s" in user
    system, _ = prompt_messages("ragas_extract", question="q", context="c")
    assert '"Insufficient Information"' in system and "not allowed to make any changes" in system


# ------------------------------------------------------------------------------------------------ sentences


def test_sentence_splitter() -> None:
    text = "Oppenheimer is a 2023 film by Christopher Nolan. J. Robert Oppenheimer was a physicist. He served the U.S. Army? Yes!\n\nLaunch\nIt costs $25.5 million (e.g. a lot)."
    assert split_sentences(text) == [
        "Oppenheimer is a 2023 film by Christopher Nolan.",
        "J. Robert Oppenheimer was a physicist.",
        "He served the U.S. Army?",
        "Yes!",
        "Launch",
        "It costs $25.5 million (e.g. a lot).",
    ]
    assert len(split_sentences("\n".join(DOCS_A))) == 4
    assert split_sentences("") == [] and split_sentences(" . \n") == []


# -------------------------------------------------------------------------------- the judge over real HTTP


async def test_three_metrics_over_http_match_hand_computed_values() -> None:
    async with ScriptedUpstream(fixture_script(FIXTURES)) as upstream:
        client = JudgeClient(endpoint(upstream.base_url))
        judge = Judge(client, TableEmbedder())
        a, b, c = await asyncio.gather(
            judge.judge(QUESTION_A, DOCS_A, ANSWER_A),
            judge.judge(QUESTION_B, DOCS_B, ANSWER_B),
            judge.judge(QUESTION_C, DOCS_C, ANSWER_C),
        )
        await client.close()
        bodies = [r.body for r in upstream.requests]

    assert a.score("faithfulness") == pytest.approx(2 / 3)
    assert a.results["faithfulness"].details["verdicts"] == [1, 0, 1]
    assert a.score("answer_relevance") == pytest.approx(0.8, abs=1e-6)
    assert a.score("context_relevance") == pytest.approx(0.5)
    assert a.usage.calls == 4 and a.usage.prompt_tokens == 400

    assert b.score("faithfulness") == 0.0
    assert b.score("answer_relevance") == 0.0 and b.results["answer_relevance"].reason == "noncommittal answer"
    assert b.score("context_relevance") == 0.0 and b.results["context_relevance"].reason == "insufficient information"

    assert c.score("faithfulness") is None and "malformed statements reply" in c.results["faithfulness"].reason
    assert c.results["faithfulness"].calls == 1  # no verification call after a malformed statements reply
    assert c.score("answer_relevance") is None and "noncommittal" in c.results["answer_relevance"].reason
    assert c.score("context_relevance") == pytest.approx(1 / 3)
    assert not c.transport_error

    assert len(bodies) == 4 + 4 + 3
    for body in bodies:
        assert body["model"] == "judge-test"
        assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0
        assert prompt_kind(body) is not None
    verify = next(b for b in bodies if prompt_kind(b) == VERIFY and ANSWER_A not in json.dumps(b) and "Tom Cruise" in json.dumps(b))
    assert "statement 2: Tom Cruise plays the lead in Oppenheimer." in verify["messages"][1]["content"]
    assert DOCS_A[1] in verify["messages"][1]["content"]  # the documents joined are the context


async def test_json_mode_can_be_turned_off_and_metrics_selected() -> None:
    async with ScriptedUpstream(generic_ragas_script()) as upstream:
        client = JudgeClient(endpoint(upstream.base_url, json_mode=False, temperature=None, max_tokens=None))
        judgement = await Judge(client, None, metrics=["context_relevance"]).judge(QUESTION_A, DOCS_A, ANSWER_A)
        await client.close()
        body = upstream.requests[0].body
    assert list(judgement.results) == ["context_relevance"] and judgement.score("context_relevance") == 0.25
    assert "response_format" not in body and "temperature" not in body and "max_tokens" not in body
    assert len(upstream.requests) == 1


async def test_retries_with_backoff_on_429_and_5xx() -> None:
    fixture = Fixture(FIXTURES[0].match, FIXTURES[0].replies, status={STATEMENTS: [429, 503], EXTRACT: [500]})
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with ScriptedUpstream(fixture_script([fixture])) as upstream:
        client = JudgeClient(endpoint(upstream.base_url, backoff_base_s=1.0, backoff_max_s=3.0), sleep=sleep, jitter=lambda: 1.0)
        judgement = await Judge(client, TableEmbedder()).judge(QUESTION_A, DOCS_A, ANSWER_A)
        await client.close()
    assert judgement.score("faithfulness") == pytest.approx(2 / 3) and judgement.score("context_relevance") == 0.5
    assert judgement.usage.retries == 3 and judgement.usage.calls == 4 and judgement.usage.failed == 0
    assert sorted(sleeps) == [1.0, 1.0, 2.0]  # base * 2**attempt (jitter 1.0): 1 s, then 2 s; and 1 s for EXTRACT


async def test_gives_up_after_retries_and_does_not_retry_4xx() -> None:
    fixture = Fixture(FIXTURES[0].match, FIXTURES[0].replies, status={STATEMENTS: [500, 500, 500], QUESTIONS: [400]})
    async with ScriptedUpstream(fixture_script([fixture])) as upstream:
        client = JudgeClient(endpoint(upstream.base_url, max_retries=2))
        judgement = await Judge(client, TableEmbedder()).judge(QUESTION_A, DOCS_A, ANSWER_A)
        await client.close()
        kinds = [prompt_kind(r.body) for r in upstream.requests]
    faith = judgement.results["faithfulness"]
    assert faith.score is None and faith.transport_error and faith.reason == "judge HTTP 500"
    assert judgement.results["answer_relevance"].reason == "judge HTTP 400"
    assert kinds.count(STATEMENTS) == 3 and kinds.count(QUESTIONS) == 1  # 1 + 2 retries; a 400 is not retried
    assert judgement.transport_error and judgement.usage.failed == 2


async def test_connection_errors_are_retried_then_reported() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = JudgeClient(endpoint(f"http://127.0.0.1:{port}/v1", max_retries=1, timeout_s=2.0))
    judgement = await Judge(client, TableEmbedder(), metrics=["context_relevance"]).judge(QUESTION_A, DOCS_A, ANSWER_A)
    await client.close()
    result = judgement.results["context_relevance"]
    assert result.score is None and result.transport_error and "unreachable" in result.reason
    assert judgement.usage.retries == 1 and judgement.usage.failed == 1


async def test_empty_answer_and_missing_context_cost_nothing() -> None:
    async with ScriptedUpstream(generic_ragas_script()) as upstream:
        client = JudgeClient(endpoint(upstream.base_url))
        judgement = await Judge(client, TableEmbedder()).judge(QUESTION_A, [], "")
        await client.close()
        assert upstream.requests == []
    assert {n: r.reason for n, r in judgement.results.items()} == {
        "faithfulness": "empty answer", "answer_relevance": "empty answer", "context_relevance": "no context"}


# ----------------------------------------------------------------------------------------- `ragtap judge`


def write_rows(path: Path) -> None:
    rows = [
        {"id": "a", "question": QUESTION_A, "documents": DOCS_A, "answer": ANSWER_A, "scores": {"qa": 0.5}},
        {"id": "b", "question": QUESTION_B, "documents": [{"id": "d1", "text": DOCS_B[0]}], "answer": ANSWER_B},
        {"id": "c", "question": QUESTION_C, "retrieved": DOCS_C, "answer": ANSWER_C},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def run_cli(argv: list[str]) -> int:
    from ragtap.cli import main

    return main(argv)


@pytest.fixture
def table_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    use_embedder(monkeypatch, TableEmbedder())


async def test_ragtap_judge_command_is_resumable_and_reports_cost(tmp_path: Path, table_embedder, capfd) -> None:
    source, out, cache = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.jsonl"
    write_rows(source)
    async with ScriptedUpstream(fixture_script(FIXTURES)) as upstream:
        base = ["judge", str(source), "--out", str(out), "--judge-url", upstream.base_url, "--judge-model", "judge-test",
                "--cache", str(cache), "--quiet", "--concurrency", "2"]
        # a first, interrupted run: only the first row
        assert await asyncio.to_thread(run_cli, [*base, "--limit", "1"]) == 0
        assert len(upstream.requests) == 4
        first = capfd.readouterr().err
        assert "cost: 4 judge calls (0 retried, 0 failed), 400 prompt +" in first

        assert await asyncio.to_thread(run_cli, [*base, "--price-prompt", "1.0", "--price-completion", "2.0"]) == 0
        assert len(upstream.requests) == 4 + 4 + 3  # row a came from the cache
        second = capfd.readouterr().err
        assert "2 by the judge, 1 from the cache" in second and "cost: 7 judge calls" in second and "$0.00" in second

        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert [line["id"] for line in lines] == ["a", "b", "c"]  # input order, input fields kept
        assert lines[0]["scores"] == {"qa": 0.5}
        assert lines[0]["judge"]["faithfulness"] == pytest.approx(2 / 3, abs=1e-6)
        assert lines[0]["judge"]["answer_relevance"] == pytest.approx(0.8, abs=1e-6)
        assert lines[0]["judge"]["context_relevance"] == 0.5
        assert lines[1]["judge"]["answer_relevance"] == 0.0 and lines[1]["judge"]["reasons"]["answer_relevance"] == "noncommittal answer"
        assert lines[2]["judge"]["faithfulness"] is None and "malformed" in lines[2]["judge"]["reasons"]["faithfulness"]
        assert lines[2]["judge"]["prompts"]["ragas_verify"] == 1 and lines[2]["judge"]["model"] == "judge-test"

        # a third run judges nothing; another judge model invalidates the cache
        assert await asyncio.to_thread(run_cli, base) == 0
        assert len(upstream.requests) == 11 and "0 by the judge, 3 from the cache" in capfd.readouterr().err
        other = ["judge", str(source), "--out", str(out), "--judge-url", upstream.base_url, "--judge-model", "other",
                 "--cache", str(cache), "--quiet"]
        assert await asyncio.to_thread(run_cli, other) == 0
        assert len(upstream.requests) == 22


async def test_rows_with_failed_calls_are_not_cached(tmp_path: Path, table_embedder, capfd) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_rows(source)
    failing = Fixture(FIXTURES[0].match, FIXTURES[0].replies, status={EXTRACT: [502, 502]})
    async with ScriptedUpstream(fixture_script([failing, *FIXTURES[1:]])) as upstream:
        argv = ["judge", str(source), "--out", str(out), "--judge-url", upstream.base_url, "--retries", "1", "--quiet"]
        assert await asyncio.to_thread(run_cli, argv) == 1  # some rows need a rerun
        err = capfd.readouterr().err
        assert "1 with failed calls (not cached: rerun to retry)" in err and "1 failed" in err
        row = json.loads(out.read_text().splitlines()[0])
        assert row["judge"]["context_relevance"] is None and row["judge"]["metrics"]["context_relevance"]["transport_error"]
        before = len(upstream.requests)
        assert await asyncio.to_thread(run_cli, argv) == 0  # the 502s are used up: row a is judged again, b and c cached
        assert len(upstream.requests) - before == 4
    assert Path(f"{out}.judge-cache.jsonl").is_file()
    assert json.loads(out.read_text().splitlines()[0])["judge"]["context_relevance"] == 0.5


def test_ragtap_judge_rejects_bad_input(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": 3}\n')
    assert run_cli(["judge", str(bad), "--quiet"]) == 2
    assert "'question' must be a string" in capsys.readouterr().err
    assert run_cli(["judge", str(tmp_path / "missing.jsonl")]) == 2
    good = tmp_path / "good.jsonl"
    write_rows(good)
    assert run_cli(["judge", str(good), "--metrics", "faithfulness,helpfulness", "--quiet"]) == 2
    assert "--metrics takes a subset of" in capsys.readouterr().err


async def test_a_failing_embedder_nulls_answer_relevance_only() -> None:
    class Broken:
        name = "broken"

        def embed(self, texts):
            raise ConnectionError("embedding endpoint down")

    async with ScriptedUpstream(fixture_script(FIXTURES)) as upstream:
        client = JudgeClient(endpoint(upstream.base_url))
        judgement = await Judge(client, Broken()).judge(QUESTION_A, DOCS_A, ANSWER_A)
        await client.close()
    result = judgement.results["answer_relevance"]
    assert result.score is None and result.transport_error and result.reason == "embedding failed (ConnectionError)"
    assert judgement.score("faithfulness") == pytest.approx(2 / 3) and judgement.score("context_relevance") == 0.5
