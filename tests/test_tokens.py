"""Token accounting with tiktoken works with the network blocked: the encodings ship with ragtap (issue 11)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from ragtap.tokens import SHIPPED_ENCODINGS, count_tokens

DATA = Path(__file__).resolve().parents[1] / "ragtap" / "tokens_data"
EXPECTED_SHA256 = {  # tiktoken_ext.openai_public's expected hashes
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

BLOCKED = r'''
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network blocked by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
socket.create_connection = refuse
from ragtap.tokens import count_tokens
print(count_tokens("hello world", "gpt-4o"), count_tokens("hello world", "gpt-4"), count_tokens("hello world", "text-davinci-003"),
      count_tokens("<|endoftext|> is text here", "my-local-llama"))
'''


def test_shipped_files_are_the_published_encodings() -> None:
    assert set(EXPECTED_SHA256) == SHIPPED_ENCODINGS
    for name, sha256 in EXPECTED_SHA256.items():
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        path = DATA / hashlib.sha1(url.encode()).hexdigest()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256


def test_counts_with_the_network_blocked_in_a_fresh_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path))  # no cache of a previous download
    result = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, env=env, timeout=60,
                            cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    # o200k_base (gpt-4o), cl100k_base (gpt-4), an unshipped encoding and an unknown model fall back to o200k_base;
    # special-token text in an answer is counted as text, never an error
    assert result.stdout.split() == ["2", "2", "2", "10"]


def test_count_tokens_in_process() -> None:
    assert count_tokens("In aws service, no, all the public facing apis remain the same.", "gpt-4o-mini") > 10
