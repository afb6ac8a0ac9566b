"""The resumable judge cache: a JSON-lines file of finished judgements, keyed by what determines them.

The key is a SHA-256 over the judged texts of the row (question, documents, answer), the judge model, the
versions of the prompts used, n (questions for answer relevance) and the embedder's name: change any of them
and the row is judged again; other fields of the row (id, cosine scores, ...) do not invalidate it.  Each
judgement is appended and flushed as soon as it is done, so an interrupted run loses at most the rows in flight,
and a rerun skips every row already in the file.  Judgements with a failed call (`transport_error`) are not
stored, so a rerun retries them.  A torn last line (a crash mid-write) is ignored on load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import orjson


def judge_key(
    question: str,
    documents: Sequence[str],
    answer: str | None,
    *,
    model: str,
    prompt_versions: Mapping[str, int],
    questions: int,
    embedder: str | None,
) -> str:
    payload = {
        "question": question,
        "documents": list(documents),
        "answer": answer,
        "model": model,
        "prompts": dict(sorted(prompt_versions.items())),
        "n": questions,
        "embedder": embedder,
    }
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


class JudgeCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = {}
        self._handle: IO[bytes] | None = None
        if self.path.is_file():
            with open(self.path, "rb") as handle:
                for line in handle:
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # a torn line from an interrupted run
                    if isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("judgement"), dict):
                        self.entries[entry["key"]] = entry["judgement"]

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, judgement: dict[str, Any]) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "ab")  # noqa: SIM115
            if self._handle.tell() > 0:
                self._handle.write(b"\n")  # never append to a torn line
        self._handle.write(orjson.dumps({"key": key, "judgement": judgement}) + b"\n")
        self._handle.flush()
        self.entries[key] = judgement

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
