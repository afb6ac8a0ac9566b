"""Real framework code against ragtap: each framework runs in its own pinned venv (tests/frameworks/NAME.txt,
built by scripts/framework-envs.sh, which scripts/test.sh calls), pointed at ragtap by base URL only; ragtap
forwards to the scripted upstream.  Asserted: the recognition rule, and the exact answer the app receives,
streamed and not.  The request bodies the framework sent are compared with the small fixtures kept in
tests/fixtures/frameworks/ (re-written with RAGTAP_UPDATE_FIXTURES=1), which tests/test_recognise_fixtures.py
recognises without the framework installed.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from conftest import ANSWER, fixed, json_content

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
APP_TIMEOUT_S = 60.0


def framework_python(name: str) -> Path:
    env = ROOT / ".ragtap-cache" / "frameworks" / name
    python = env / "bin" / "python"
    if (env / ".installed").is_file() and python.exists():
        return python
    reason = (env / "failed").read_text().strip() if (env / "failed").is_file() else "not built"
    message = f"{name} test venv unavailable ({reason}): run scripts/framework-envs.sh"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


async def run_app(python: Path, script: str, base_url: str, layout: str, stream: bool) -> dict:
    process = await asyncio.create_subprocess_exec(
        str(python), str(ROOT / "tests" / "frameworks" / script), base_url, layout, "1" if stream else "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-test", "NO_PROXY": "127.0.0.1"},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), APP_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


def check_fixture(name: str, bodies: list[dict]) -> None:
    """The first request body the framework sent, kept as a fixture (stream flag and options dropped)."""
    body = {"messages": bodies[0]["messages"]}
    path = FIXTURES / f"{name}.json"
    if os.environ.get("RAGTAP_UPDATE_FIXTURES") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == body, f"{name}: the framework now sends another layout; see {path}"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("layout", "rule"),
    [("lcel_system", "langchain"), ("lcel_human", "langchain"), ("agent_middleware", "generic")],
)
async def test_langchain(start_proxy, layout: str, rule: str, stream: bool) -> None:
    python = framework_python("langchain")
    proxy = await start_proxy(fixed(json_content()))
    result = await run_app(python, "langchain_app.py", proxy.server.base_url, layout, stream)
    assert result["answer"] == ANSWER
    record = await proxy.collector.exchange(1)
    assert record.recognition == rule and record.injected
    check_fixture(f"langchain_{layout}", result["requests"])
