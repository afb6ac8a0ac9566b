"""Say why not: every chat request carries a recognition reason (the rule, the client setting that forbids
injection, or why it is not RAG) on its ExchangeRecord, as the `ragtap_recognition_total{reason}` label and the
`ragtap.recognition` span attribute.  Through real HTTP: the openai SDK, ragtap, the scripted upstream."""

from __future__ import annotations

import pytest

from ragtap.exporters.prometheus import PrometheusExporter
from ragtap.recognise import REASONS, recognise

from conftest import ANSWER, DOCUMENTS, QUESTION, explicit, fixed, json_content
from framework_templates import RLM_RAG_PROMPT

MODEL = "gpt-test"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


def rlm_messages() -> list[dict[str, str]]:
    return [{"role": "user", "content": RLM_RAG_PROMPT.format(question=QUESTION, context="\n\n".join(DOCUMENTS))}]


@pytest.mark.parametrize(
    ("messages", "extra", "reason"),
    [
        ([{"role": "user", "content": "What is 2+2?"}], {}, "no_context"),
        ([{"role": "system", "content": "You are terse."}], {}, "no_question"),
        (rlm_messages(), {}, "langchain"),
        (rlm_messages(), {"tools": TOOLS}, "client_tools"),
        ([{"role": "user", "content": QUESTION}], explicit(), "explicit"),
        ([{"role": "user", "content": QUESTION}], {"ragtap": {"enabled": False}}, "disabled"),
    ],
)
async def test_the_reason_reaches_the_record_and_the_metrics(start_proxy, messages, extra, reason) -> None:
    proxy = await start_proxy(fixed(json_content()) if reason in ("langchain", "explicit") else fixed(ANSWER))
    reply = await proxy.client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra)
    assert reply.choices[0].message.content == ANSWER  # the app's answer is unchanged whatever the reason
    record = await proxy.collector.exchange(1)
    assert record.recognition == reason
    prometheus = PrometheusExporter()
    prometheus.exchange_finished(record)
    text = prometheus.render()[0].decode()
    assert f'ragtap_recognition_total{{reason="{reason}"}} 1.0' in text


def test_reasons_are_a_closed_set() -> None:
    bodies = [None, {}, {"messages": []}, {"messages": rlm_messages()}, {"messages": rlm_messages(), "n": 2},
              {"messages": rlm_messages(), "response_format": {"type": "json_object"}},
              {"messages": [{"role": "user", "content": "hi"}], "ragtap": 3}]
    assert {recognise(b).reason for b in bodies} <= REASONS
    assert len(REASONS) < 40  # bounded label cardinality
