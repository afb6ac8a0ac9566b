"""The typed exchange and the wiring (issue 11): over real HTTP, every exporter hook sees the final record —
supporting-content tokens settled before `exchange_finished`, user and session taken from the request — and the
scored interaction carries that same record; parts are built by name from registries."""

from __future__ import annotations

import pytest

from ragtap.config import load_config
from ragtap.exchange import request_identity
from ragtap.tokens import count_tokens
from ragtap.wiring import EXPORTERS, build_exporters, build_policy, register_exporter

from conftest import ENV, SUPPORTING, explicit, fixed, json_content, rag_messages

MODEL = "gpt-4o-mini"


@pytest.mark.parametrize("stream", [False, True])
async def test_supporting_tokens_are_settled_before_the_exchange_hooks(start_proxy, stream: bool) -> None:
    proxy = await start_proxy(fixed(json_content()))
    kwargs = dict(model=MODEL, messages=rag_messages(), user="user-7", metadata={"session_id": "sess-42"}, extra_body=explicit())
    if stream:
        async for _ in await proxy.client.chat.completions.create(stream=True, **kwargs):
            pass
    else:
        await proxy.client.chat.completions.create(**kwargs)
    record = await proxy.collector.exchange()
    # The hook ran with the count already there (the Collector keeps the object the hook saw).
    assert record.supporting_tokens == count_tokens(SUPPORTING, MODEL)
    assert (record.user, record.session) == ("user-7", "sess-42")
    interaction, _ = await proxy.collector.assessment()
    assert interaction.exchange is record


async def test_identity_headers_take_precedence_over_the_body(start_proxy) -> None:
    proxy = await start_proxy(fixed(json_content()))
    await proxy.client.chat.completions.create(
        model=MODEL, messages=rag_messages(), user="body-user", extra_body=explicit(), extra_headers={"x-ragtap-user": "gw-user", "x-ragtap-session": "gw-sess"}
    )
    record = await proxy.collector.exchange()
    assert (record.user, record.session) == ("gw-user", "gw-sess")


def test_request_identity_caps_and_ignores_non_strings() -> None:
    user, session = request_identity({"user": "x" * 1000, "metadata": {"session_id": 5}}, {})
    assert user == "x" * 256 and session is None
    assert request_identity({"safety_identifier": "sid", "metadata": "junk"}, {}) == ("sid", None)
    assert request_identity(None, {}) == (None, None)


def test_exporters_are_built_by_name_and_new_ones_register() -> None:
    from ragtap.exporters.store import StoreExporter

    config = load_config(environ=ENV, flags={"otel": {"enabled": False}})
    built = build_exporters(config)
    assert built.prometheus is not None and built.store is not None  # the capture store is on by default
    assert built.exporters[0] is built.prometheus and [type(e) for e in built.exporters[1:]] == [StoreExporter]
    built.store.close_sync()
    config = load_config(environ=ENV, flags={"otel": {"enabled": False}, "store": {"capture": "none"}})
    marker: list[str] = []
    register_exporter("test-marker", lambda cfg, b: marker.append("built") or [])
    try:
        build_exporters(config)
        assert marker == ["built"]
    finally:
        del EXPORTERS["test-marker"]
    assert build_policy(config).thresholds == config.thresholds
