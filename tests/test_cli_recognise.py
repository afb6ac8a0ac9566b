"""`ragtap recognise FILE.jsonl` explains, per logged request body, what ragtap would do and why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from framework_templates import RLM_RAG_PROMPT

ROOT = Path(__file__).resolve().parents[1]


def test_recognise_command_explains_each_line(tmp_path: Path) -> None:
    rag = {"model": "m", "messages": [{"role": "user", "content": RLM_RAG_PROMPT.format(
        question="What colour is the door?", context="The door is red.\n\nThe wall is white.")}]}
    lines = [
        json.dumps(rag),
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hello there"}]}),
        json.dumps({"body": {**rag, "tools": [{"type": "function", "function": {"name": "f"}}]}}),
        "not json",
        "",
        json.dumps({"model": "m", "messages": [{"role": "system", "content": "Be brief."}]}),
    ]
    source = tmp_path / "bodies.jsonl"
    source.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "ragtap", "recognise", str(source)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert out == [
        {"line": 1, "reason": "langchain", "rag": True, "inject": True, "rule": "langchain",
         "question": "What colour is the door?", "documents": 2},
        {"line": 2, "reason": "no_context", "rag": False, "inject": False},
        {"line": 3, "reason": "client_tools", "rag": True, "inject": False, "rule": "langchain",
         "question": "What colour is the door?", "documents": 2},
        {"line": 4, "reason": "bad_body", "rag": False, "inject": False, "detail": "not JSON"},
        {"line": 6, "reason": "no_question", "rag": False, "inject": False},
    ]
    assert "5 request bodies:" in done.stderr and "langchain" in done.stderr


def test_recognise_command_missing_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ragtap", "recognise", str(tmp_path / "nope.jsonl")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == f"ragtap: no such file: {tmp_path / 'nope.jsonl'}"


def test_recognise_command_reads_responses_api_bodies(tmp_path: Path) -> None:
    prompt = RLM_RAG_PROMPT.format(question="What colour is the door?", context="The door is red.\n\nThe wall is white.")
    lines = [
        json.dumps({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]}),
        json.dumps({"request": {"model": "m", "input": prompt, "background": True}}),
        json.dumps({"model": "m", "input": "Hello there"}),
    ]
    source = tmp_path / "responses.jsonl"
    source.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "ragtap", "recognise", str(source)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["reason"], r["rag"], r["inject"]) for r in rows] == [
        ("langchain", True, True), ("client_background", True, False), ("no_context", False, False)]
    assert rows[0]["question"] == "What colour is the door?" and rows[0]["documents"] == 2
