"""The triage page served by a real ragtap whose capture store was filled through the proxy (the official openai
SDK -> ragtap -> the scripted upstream): on the proxy's port, on its own listener, off where it would be exposed
without a token, and announced by `ragtap serve` in its start-up line.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from triage_rows import HOSTILE_ANSWER, HOSTILE_CONTRADICTED, HOSTILE_DOCUMENTS, HOSTILE_QUESTION, HOSTILE_SUPPORTING, HOSTILE_UNSUPPORTED

from ragtap.config import load_config
from ragtap.demo.cases import thesis_cases, thesis_script
from ragtap.proxy.state import CAPTURE_STORE
from ragtap.proxy.triage import triage_unavailable
from ragtap.testing.upstream import ScriptedReply, json_reply, was_injected

from conftest import Proxy, explicit, rag_messages

MODEL = "gpt-4o-mini"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CASES = thesis_cases()


def triage_script(body: dict[str, Any]) -> ScriptedReply:
    """The thesis's five examples, plus the hostile one."""
    if "Where is the Eiffel tower?" in str(body.get("messages")):
        return ScriptedReply(json_reply(HOSTILE_ANSWER, HOSTILE_SUPPORTING) if was_injected(body) else HOSTILE_ANSWER)
    return thesis_script(body)


async def play(proxy: Proxy, *, first_span: int = 1) -> int:
    """The six exchanges through the proxy (users alice/bob, one session each, a traceparent each); returns 6."""
    exchanges = [(c.question, list(c.retrieved), c.answer) for c in CASES] + [(HOSTILE_QUESTION, list(HOSTILE_DOCUMENTS), HOSTILE_ANSWER)]
    for n, (question, documents, answer) in enumerate(exchanges):
        completion = await proxy.client.chat.completions.create(
            model=MODEL, messages=rag_messages(question, documents), user="alice" if n % 2 else "bob",
            metadata={"session_id": f"session-{n}"}, extra_body=explicit(question, documents),
            extra_headers={"traceparent": f"00-{TRACE_ID}-{first_span + n:016x}-01"})
        assert completion.choices[0].message.content == answer  # the app's answer is untouched
    return len(exchanges)


async def stored(proxy: Proxy, total: int) -> None:
    """Wait (bounded) until `total` interactions were scored and written."""
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) >= total, 60, f"{total} assessments")
    store = proxy.server.app[CAPTURE_STORE]
    assert await store.flush(timeout=20)
    assert await store.count() == total


def flags(tmp_path: Path, **triage: Any) -> dict[str, dict[str, Any]]:
    return {"store": {"path": str(tmp_path / "capture.sqlite3"), "capture": "all"},
            "triage": {"trace_url": "http://127.0.0.1:16686/trace/{trace_id}", **triage}}


async def test_the_page_on_the_proxy_port_lists_and_opens_what_went_through_the_proxy(start_proxy, tmp_path: Path) -> None:
    proxy = await start_proxy(triage_script, flags=flags(tmp_path))
    total = await play(proxy)
    await stored(proxy, total)
    assert proxy.server.triage_url == f"{proxy.url}/triage/"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        async with http.get(proxy.server.triage_url) as page:
            assert page.status == 200 and "<title>ragtap triage</title>" in await page.text()
        async with http.get(f"{proxy.url}/triage/api/interactions") as response:
            rows = (await response.json())["items"]
        assert [row["question"] for row in rows][0] == HOSTILE_QUESTION  # newest first
        assert len(rows) == total and {row["model"] for row in rows} == {MODEL}
        async with http.get(f"{proxy.url}/triage/api/interactions?verdict=refusal") as response:
            refusals = (await response.json())["items"]
        assert sorted(row["question"] for row in refusals) == sorted(c.question for c in CASES if c.id in ("thesis-4", "thesis-5"))
        async with http.get(f"{proxy.url}/triage/api/interactions?user=alice&q=Eiffel") as response:
            [hostile] = (await response.json())["items"]
        async with http.get(f"{proxy.url}/triage/api/interactions/{hostile['id']}") as response:
            item = await response.json()
        assert item["verdict"] == "unsupported_answer" and item["answer"] == HOSTILE_ANSWER
        [claim, contradicted] = [c for c in item["claims"] if c["of"] == "answer" and c["supported"] is False]
        assert item["answer"][claim["start"]:claim["end"]] == HOSTILE_UNSUPPORTED and claim["outcome"] == "not_found"
        assert item["answer"][contradicted["start"]:contradicted["end"]] == HOSTILE_CONTRADICTED
        assert contradicted["outcome"] == "contradicted" and contradicted["conflicts"] == ["number: 1899 vs 1889"]
        assert item["trace"]["url"] == f"http://127.0.0.1:16686/trace/{TRACE_ID}"
        assert item["tokens"]["prompt"] and item["tokens"]["supporting"] and item["latency_ms"] > 0
        assert item["documents"][item["attributed_document"]]["attributed"] is True
        async with http.post(f"{proxy.url}/triage/api/interactions/{hostile['id']}/labels",
                             json={"verdict_right": False, "right_verdict": "grounded", "note": "the year is right"}) as response:
            assert response.status == 201
        async with http.get(f"{proxy.url}/triage/api/interactions?labelled=true") as response:
            [labelled] = (await response.json())["items"]
        assert labelled["id"] == hostile["id"] and labelled["label"]["right_verdict"] == "grounded"
        async with http.get(f"{proxy.url}/triage/no/such/page") as response:
            assert response.status == 404
    # nothing under /triage was forwarded to the upstream
    assert not [r for r in proxy.upstream.requests if r.path.startswith("/triage")]


async def test_the_page_on_its_own_listener(start_proxy, tmp_path: Path) -> None:
    proxy = await start_proxy(triage_script, flags=flags(tmp_path, listen_port=0, path="/review"))
    await play(proxy)
    await stored(proxy, 6)
    port = proxy.server.triage_port
    assert port is not None and port != proxy.server.port
    assert proxy.server.triage_url == f"http://127.0.0.1:{port}/review/"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        async with http.get(f"http://127.0.0.1:{port}/review/api/interactions?limit=2") as response:
            body = await response.json()
        assert len(body["items"]) == 2 and body["next_cursor"]


def test_the_page_is_not_served_where_it_would_be_exposed_without_a_token(tmp_path: Path) -> None:
    store = object()  # only its presence matters here
    base = {"store": {"path": str(tmp_path / "c.sqlite3")}}
    assert triage_unavailable(load_config(flags=base, environ={}), store) is None  # loopback: served
    exposed = load_config(flags={**base, "server": {"host": "0.0.0.0"}}, environ={})
    reason = triage_unavailable(exposed, store)
    assert reason is not None and "0.0.0.0 without a token" in reason and "RAGTAP_METRICS_TOKEN" in reason
    with_token = load_config(flags={**base, "server": {"host": "0.0.0.0"}}, environ={"RAGTAP_METRICS_TOKEN": "t0ken"})
    assert triage_unavailable(with_token, store) is None
    allowed = load_config(flags={**base, "server": {"host": "0.0.0.0"}, "triage": {"allow_unauthenticated": True}}, environ={})
    assert triage_unavailable(allowed, store) is None
    own_loopback_listener = load_config(flags={**base, "server": {"host": "0.0.0.0"}, "triage": {"listen_port": 9999, "listen_host": "127.0.0.1"}}, environ={})
    assert triage_unavailable(own_loopback_listener, store) is None
    assert "no capture store" in (triage_unavailable(load_config(environ={}), None) or "")
    assert "enabled = false" in (triage_unavailable(load_config(flags={**base, "triage": {"enabled": False}}, environ={}), store) or "")


@pytest.mark.parametrize(("key", "value", "words"), [
    ("trace_url", "javascript:alert(1)//{trace_id}", "expected an http(s) URL template"),
    ("trace_url", "http://jaeger/trace/", "with {trace_id}"),
    ("trace_url", "http://jaeger/{trace_id}/{tenant}", "unknown placeholder(s) tenant"),
    ("path", "/", "expected a path such as /triage"),
    ("page_size", 1000, "less than or equal to 500"),
])
def test_bad_triage_settings_are_one_line_config_errors(key: str, value: Any, words: str) -> None:
    from ragtap.config import ConfigError

    with pytest.raises(ConfigError) as error:
        load_config(flags={"triage": {key: value}}, environ={})
    assert words in str(error.value) and "\n" not in str(error.value)


async def test_ragtap_serve_prints_the_page_url_in_its_start_up_line(tmp_path: Path) -> None:
    from ragtap.testing.upstream import ScriptedUpstream

    root = Path(__file__).resolve().parents[1]  # `python -m ragtap` from the checkout: this tree's ragtap
    async with ScriptedUpstream(triage_script) as upstream:
        config = tmp_path / "ragtap.toml"
        config.write_text(f'[server]\nport = 0\nupstream = "{upstream.base_url}"\n[store]\npath = "{tmp_path / "c.sqlite3"}"\n'
                          '[scoring]\nenabled = false\n')
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ragtap", "serve", "--config", str(config), cwd=root,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={k: v for k, v in os.environ.items() if not k.startswith(("RAGTAP_", "OTEL_"))})
        try:
            async with asyncio.timeout(60):
                line = ""
                while "ragtap listening on" not in line:
                    line = (await process.stderr.readline()).decode()  # type: ignore[union-attr]
                    assert line, f"ragtap exited: {process.returncode}"
            assert "triage page: http://127.0.0.1:" in line, line
            url = line.split("triage page: ", 1)[1].strip()
            assert url.endswith("/triage/")
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
                async with http.get(url) as page:
                    assert page.status == 200
                async with http.get(url + "api/interactions") as response:
                    assert response.status == 200 and (await response.json())["items"] == []
        finally:
            process.terminate()
            async with asyncio.timeout(30):
                await process.wait()
