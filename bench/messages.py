"""What ragtap adds to an Anthropic Messages API request (`POST /v1/messages`), against a direct call in the same run.

    .venv/bin/python bench/messages.py            # 5 repeats x 200 requests per scenario, ~2 min
    .venv/bin/python bench/messages.py --quick    # 3 repeats x 60 requests
    .venv/bin/python bench/messages.py --no-scoring   # ragtap with scoring off: the request path alone

The layout, the pairing and the figures are bench/responses.py's (its `measure`): the scripted Messages upstream
(bench/messages_upstream.py, which answers chat completions as bench/upstream.py does) and this client on core 0,
`ragtap serve` (default config: scoring on, MiniLM embedder, Prometheus) alone on core 1.  Scenarios:
- rag: a 1.5 KB LangChain `rlm/rag-prompt` as the user turn (recognised, the instruction added to `system`, the
  reply -- a preamble, then the fenced JSON -- split), not streamed;
- plain: a non-RAG request of the same size (its bytes are forwarded untouched);
- rag_stream_20 / rag_stream_200: the RAG request streamed with 20 / 200 `text_delta` events; time to the first
  answer text and to the end of the stream;
- chat_rag / chat_rag_stream_20 / chat_rag_stream_200: the same RAG request as a chat completion, for reference.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bodies  # noqa: E402
from responses import CHAT_SCENARIOS, Scenario, arguments, measure, report  # noqa: E402
from run import BENCH_KEY  # noqa: E402

PATH = "/v1/messages"


def rag_body(stream: bool, deltas: int = 20) -> bytes:
    body: dict[str, Any] = {
        "model": "claude-haiku-4-5-20251001",
        "max_tokens": deltas,
        "messages": [{"role": "user", "content": bodies.rag_prompt(bodies.NUMBERED_QUESTION, bodies.DOCUMENTS)}],
        "temperature": 0.0,
        "stream": stream,
    }
    return json.dumps(body).encode()


def plain_body() -> bytes:
    chat = json.loads(bodies.chat_body(numbered=True))
    return json.dumps({"model": "claude-haiku-4-5-20251001", "max_tokens": 20, "system": chat["messages"][0]["content"],
                       "messages": [{"role": "user", "content": chat["messages"][1]["content"]}]}).encode()


def check(base_url: str) -> None:
    """One RAG request through ragtap: the app gets the answer text, not ragtap's JSON."""
    request = urllib.request.Request(base_url + PATH, data=rag_body(False).replace(b"{n}", b"1"),
                                     headers={"Content-Type": "application/json", "x-api-key": BENCH_KEY, "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        data = json.loads(reply.read())
    text = data["content"][0]["text"]
    if not text.startswith("Customers") or "supporting" in json.dumps(data):
        raise RuntimeError(f"unexpected reply through ragtap: {text[:200]}")


def main() -> int:
    args = arguments(__doc__.split("\n")[0])
    scenarios: dict[str, Scenario] = {
        "rag": (PATH, rag_body(False), False),
        "plain": (PATH, plain_body(), False),
        "rag_stream_20": (PATH, rag_body(True, 20), True),
        "rag_stream_200": (PATH, rag_body(True, 200), True),
        **CHAT_SCENARIOS,
    }
    report(measure("messages_upstream.py", scenarios, check, args), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
