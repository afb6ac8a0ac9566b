"""Every writer writes redacted bytes (issue 24, finding 4): one `Redactor` (ragtap/privacy.py) for the capture store
(rows and both places a label's note is kept), the triage page's JSON, the JSONL interaction log and OpenTelemetry.

The main test runs the real thing: the official openai SDK -> ragtap (its own configured exporters: the default
store, the JSONL log, OTLP/HTTP to a receiver on 127.0.0.1 that keeps the raw request bodies) -> the scripted
upstream; a label is posted through the triage API; then the bytes each writer wrote are read back (the SQLite
file and its WAL, the JSONL file, the OTLP protobuf bodies, the triage JSON) and searched for the secrets.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from ragtap.config import SALT_FILE, ConfigError, data_dir, load_config
from ragtap.privacy import DEFAULT_REDACT, PrivacySettings, Redactor, settings_problem
from ragtap.proxy.server import RagtapServer
from ragtap.proxy.state import CAPTURE_STORE
from ragtap.testing.upstream import ScriptedReply, ScriptedUpstream, json_reply, was_injected
from ragtap.types import ClaimOutcome, ClaimSupport, Document

from conftest import ENV, explicit, free_port, rag_messages

ROOT = Path(__file__).resolve().parents[1]
EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
IBAN = "GB82WEST12345698765432"
USER = "jane.doe.user@corp.example"
SESSION = "sess-of-jane-7731x"
QUESTION = f"Will the nitro hypervisor change the APIs? Reply to {EMAIL}"
DOCUMENTS = [f"The nitro hypervisor keeps all public facing APIs the same. Write to {EMAIL} for help."]
SUPPORTING = f"All public facing APIs stay the same. Write to {EMAIL}."
ANSWER = f"No, the nitro hypervisor keeps the public APIs the same. For billing call {PHONE} and pay to {IBAN} from {EMAIL}."
NOTE = f"checked with {EMAIL}: right"
SECRETS = (EMAIL, PHONE, IBAN, IBAN.lower(), USER, SESSION)


def secret_script(body: dict[str, Any]) -> ScriptedReply:
    return ScriptedReply(json_reply(ANSWER, SUPPORTING) if was_injected(body) else ANSWER)


class OtlpReceiver:
    """An OTLP/HTTP endpoint on 127.0.0.1 that answers 200 and keeps every request body as it arrived."""

    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {}
        self.port = free_port()
        self._runner: web.AppRunner | None = None

    async def _receive(self, request: web.Request) -> web.Response:
        self.bodies.setdefault(request.path, []).append(await request.read())
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def __aenter__(self) -> OtlpReceiver:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{signal:.*}", self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def found_secrets(data: bytes) -> list[str]:
    return [s for s in SECRETS if s.encode() in data]


async def test_every_writer_writes_redacted_bytes_and_hashed_identities(embedder, tmp_path: Path) -> None:
    jsonl = tmp_path / "interactions.jsonl"
    async with OtlpReceiver() as receiver, ScriptedUpstream(secret_script) as upstream:
        config = load_config(environ=ENV, flags={
            "server": {"upstream": upstream.base_url, "port": 0, "shutdown_grace_s": 5.0},
            "store": {"capture": "all"},  # the default location: $XDG_DATA_HOME/ragtap/capture.sqlite3
            "log": {"interactions_path": str(jsonl)},
            "otel": {"enabled": True, "exporter": "otlp", "protocol": "http/protobuf", "capture_content": True,
                     "endpoint": f"http://127.0.0.1:{receiver.port}"},
        })
        assert config.store.path == str(data_dir() / "capture.sqlite3")
        async with RagtapServer(config, embedder=embedder) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            completion = await client.chat.completions.create(
                model="gpt-4o-mini", messages=rag_messages(QUESTION, DOCUMENTS), user=USER,
                metadata={"session_id": SESSION}, extra_body=explicit(QUESTION, DOCUMENTS))
            await client.close()
            assert completion.choices[0].message.content == ANSWER  # the app gets its answer as it was
            store = server.app[CAPTURE_STORE]
            deadline = asyncio.get_running_loop().time() + 30
            while await store.count() < 1 and asyncio.get_running_loop().time() < deadline:
                await store.flush(timeout=1)
                await asyncio.sleep(0.05)
            hashed_user = store.redactor.identity(USER)
            base = f"http://127.0.0.1:{server.port}/triage/api/interactions"
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
                async with http.get(f"{base}?user={USER}") as response:  # a person types the clear id: it is hashed too
                    [row] = (await response.json())["items"]
                async with http.get(f"{base}/{row['id']}") as response:
                    detail_bytes = await response.read()
                async with http.post(f"{base}/{row['id']}/labels", json={"verdict_right": True, "note": NOTE}) as response:
                    assert response.status == 201
                    label_bytes = await response.read()
                async with http.get(f"{base}/{row['id']}") as response:
                    labelled_bytes = await response.read()
        # stopped: the store, the JSONL log and OTel have flushed
    database = data_dir() / "capture.sqlite3"
    store_bytes = b"".join(p.read_bytes() for p in database.parent.iterdir() if p.name.startswith("capture.sqlite3"))
    otlp_bytes = b"".join(b for bodies in receiver.bodies.values() for b in bodies)
    written = {"store": store_bytes, "jsonl": jsonl.read_bytes(), "otlp": otlp_bytes, "triage detail": detail_bytes,
               "label answer": label_bytes, "labelled detail": labelled_bytes}
    # each writer wrote something real, with the hashed ids and the redaction marks in it
    assert hashed_user is not None and hashed_user.startswith("h:") and row["user"] == hashed_user
    for where in ("store", "jsonl", "otlp", "triage detail"):
        assert hashed_user.encode() in written[where] and b"[redacted]" in written[where], where
    assert {"/v1/traces", "/v1/logs"} <= set(receiver.bodies)
    assert b"gen_ai.input.messages" in otlp_bytes and b"nitro hypervisor" in otlp_bytes  # content capture was on
    assert {where: found_secrets(data) for where, data in written.items()} == {where: [] for where in written}

    # the claim that listed the phone number's and the IBAN's pieces lists them redacted, in the store and the page
    detail = json.loads(labelled_bytes)
    [claim] = [c for c in detail["claims"] if "billing" in c["text"]]
    assert claim["missing_names"] == ["[redacted]"] and "[redacted]" in claim["missing_numbers"]
    assert not {"7946", "0958"} & set(claim["missing_numbers"])
    line = json.loads(jsonl.read_text().splitlines()[0])
    [logged] = [c for c in line["claims"] if "billing" in c["text"]]
    assert logged["missing_names"] == ["[redacted]"] and not {"7946", "0958"} & set(logged["missing_numbers"])
    assert detail["label"]["note"] == "checked with [redacted]: right"
    with sqlite3.connect(database) as db:  # both places a note is kept
        assert db.execute("SELECT note FROM labels").fetchall() == [("checked with [redacted]: right",)]
        assert db.execute("SELECT label_note, user_id, session_id FROM interactions").fetchall() == [
            ("checked with [redacted]: right", hashed_user, Redactor(identity="hashed", salt=_salt()).identity(SESSION))]


def _salt() -> bytes:
    return (data_dir() / SALT_FILE).read_text().strip().encode()


@pytest.mark.parametrize(("identity", "stored"), [("clear", USER), ("none", None)])
async def test_identity_clear_only_when_configured_and_none_writes_none(start_proxy, tmp_path: Path, identity: str,
                                                                        stored: str | None) -> None:
    path = tmp_path / "c.sqlite3"
    proxy = await start_proxy(secret_script, flags={"store": {"path": str(path), "capture": "all"},
                                                    "privacy": {"identity": identity}})
    await proxy.client.chat.completions.create(model="m", messages=rag_messages(QUESTION, DOCUMENTS), user=USER,
                                               extra_body=explicit(QUESTION, DOCUMENTS))
    store = proxy.server.app[CAPTURE_STORE]
    await proxy.collector.wait_until(lambda: len(proxy.collector.scored) >= 1, 30, "the assessment")
    assert await store.flush(timeout=15) and await store.count() == 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT user_id FROM interactions").fetchall() == [(stored,)]
    assert not (data_dir() / SALT_FILE).exists()  # no hashing: no salt file


def test_the_salt_is_made_once_per_install_shared_by_processes_and_private(tmp_path: Path) -> None:
    """Three processes start together on one data directory (`ragtap serve --workers 3`, or a proxy and its
    workers): one salt file, mode 0600, and the same hash of the same id in each."""
    script = ("import sys; from ragtap.config import load_config; from ragtap.wiring import build_redactor; "
              "print(build_redactor(load_config(environ={})).identity('alice@example.com'))")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    hashes = {process.communicate(timeout=60)[0].strip() for process in processes}
    salt = tmp_path / "ragtap" / SALT_FILE
    assert len(hashes) == 1 and next(iter(hashes)).startswith("h:") and len(next(iter(hashes))) == 18
    assert salt.stat().st_mode & 0o777 == 0o600 and len(salt.read_text().strip()) == 64
    assert sorted(p.name for p in salt.parent.iterdir()) == [SALT_FILE]  # no temporary file left behind
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert again.stdout.strip() in hashes  # stable across restarts


def test_the_salt_decides_the_hash_and_a_hash_stays_itself() -> None:
    one = Redactor(identity="hashed", salt=b"x" * 32).identity("alice")
    assert one == Redactor(identity="hashed", salt=b"x" * 32).identity("alice") != Redactor(identity="hashed", salt=b"y" * 32).identity("alice")
    assert Redactor(identity="hashed", salt=b"x" * 32).identity(one) == one  # a pasted hash is that same id


# ----------------------------------------------------------------------------- finding 7: settings that break things
@pytest.mark.parametrize(("settings", "words"), [
    ({"redact_replacement": "\\1"}, "plain text only, '\\\\1'"),
    ({"redact_replacement": "\\g<0>"}, "plain text only, '\\\\g<0>'"),
    ({"redact": ["a*"]}, "matches the empty string"),
    ({"redact": ["x?"]}, "matches the empty string"),
    ({"redact": [r"\b"]}, "matches the empty string"),
    ({"redact": ["("]}, "is not a valid regex"),
    ({"redact": ["red"]}, "matches the replacement '[redacted]' itself"),
    ({"identity": "maybe"}, "privacy.identity: expected one of hashed, clear, none"),
    ({"identity_salt": "short"}, "at least 16 characters"),
])
def test_redaction_settings_that_break_things_are_rejected_in_one_line(settings: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(flags={"privacy": settings}, environ={})
    assert words in str(error.value) and "\n" not in str(error.value)


def test_the_old_store_redact_keys_say_where_they_went() -> None:
    with pytest.raises(ConfigError, match=r"store.redact: moved to \[privacy\] redact"):
        load_config(flags={"store": {"redact": ["x"]}}, environ={})


def test_a_bad_replacement_is_a_one_line_error_from_ragtap_serve(tmp_path: Path) -> None:
    """Finding 7 at the command line: `redact_replacement = '\\1'` dropped every row as write_failed; now ragtap
    does not start, with one line and exit 2."""
    config = tmp_path / "ragtap.toml"
    config.write_text("[privacy]\nredact_replacement = '\\1'\n")
    result = subprocess.run([sys.executable, "-m", "ragtap", "serve", "--config", str(config), "--port", "0"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["ragtap: config error: privacy.redact_replacement: plain text only, "
                                                  "'\\\\1' would be written as it is (got '\\\\1')"]


def test_a_zero_length_match_never_inserts_the_replacement() -> None:
    # the start-up check refuses such patterns; the redactor itself also never writes a replacement for nothing
    assert Redactor(["a*"], "X").text("banana") == "bXnXnX"
    assert settings_problem(PrivacySettings()) is None  # the defaults pass their own check


@pytest.mark.parametrize(("text", "kept"), [
    (f"mail {EMAIL} now", "mail [redacted] now"),
    ("IBAN DE89 3704 0044 0532 0130 00 ok", "IBAN [redacted] ok"),
    ("card 4111 1111 1111 1111 ok", "card [redacted] ok"),
    (f"call {PHONE} ok", "call [redacted] ok"),
    ("key sk-proj-abcdefghijklmnop1234 ok", "key [redacted] ok"),
    ("12,500 units in 2024 on 2024-08-06, GPT-4 at 3.5 GHz, order 1234567890", None),  # ordinary RAG text stays
])
def test_the_default_patterns(text: str, kept: str | None) -> None:
    assert Redactor(DEFAULT_REDACT).text(text) == (text if kept is None else kept)


def test_claim_pieces_of_a_redacted_match_are_redacted_but_others_kept() -> None:
    claim = ClaimSupport(of="answer", text=f"Call {PHONE} for the 2024 plan.", start=0, end=40, outcome=ClaimOutcome.NOT_FOUND,
                         reason="number_missing", similarity=0.3, document=0, passage_start=0, passage_end=10,
                         lexical_precision=0.5, missing_numbers=("0958", "2024", "44", "7946"), missing_names=(),
                         conflicts=("number: 7946 vs 1234",), evidence_document=0, evidence_start=0, evidence_end=10)
    [redacted] = Redactor(DEFAULT_REDACT).claims((claim,), f"Call [redacted] for the 2024 plan.", None, (Document("x" * 10),))
    assert redacted.missing_numbers == ("[redacted]", "2024", "[redacted]", "[redacted]")
    assert redacted.conflicts == ("number: [redacted] vs 1234",) and redacted.text == "Call [redacted] for the 2024 plan."
    assert (redacted.start, redacted.end) == (0, len(redacted.text))


def test_an_empty_identity_salt_means_the_salt_file() -> None:
    assert load_config(environ={"RAGTAP_IDENTITY_SALT": ""}).privacy.identity_salt is None
    assert load_config(environ={"RAGTAP_IDENTITY_SALT": "s" * 20}).privacy.identity_salt == "s" * 20
