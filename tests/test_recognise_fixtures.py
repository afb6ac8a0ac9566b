"""The request bodies real frameworks sent (captured by tests/test_frameworks.py into tests/fixtures/frameworks/,
synthetic documents) are recognised by the expected rule, without the frameworks installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtap.recognise import recognise

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "frameworks"
EXPECTED = {
    "langchain_lcel_system": "langchain",
    "langchain_lcel_human": "langchain",
    "langchain_agent_middleware": "generic",
}


def test_every_fixture_has_an_expectation() -> None:
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize(("name", "rule"), sorted(EXPECTED.items()))
def test_captured_framework_body_is_recognised(name: str, rule: str) -> None:
    body = json.loads((FIXTURES / f"{name}.json").read_text())
    found = recognise(body)
    assert found.reason == rule and found.inject
    assert found.context is not None
    assert found.context.question == "Which port does the billing service listen on?"
    assert [d.text for d in found.context.documents] == [
        "The billing service listens on port 8443 behind the internal load balancer.",
        "The billing service is owned by the Falcon team; on-call rotates every Monday.",
    ]
