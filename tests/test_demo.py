"""`ragtap demo`: the thesis's five examples through a real ragtap (its own embedder and exporters), end to end."""

from __future__ import annotations

import pytest

from ragtap.commands.demo import format_table, play
from ragtap.config import data_dir, load_config

EXPECTED = [
    ("grounded", False),
    ("unsupported_answer", True),
    ("parametric", True),
    ("refusal", True),
    ("refusal", True),
]


async def test_demo_plays_the_five_cases() -> None:
    config = load_config(environ={})
    assert config.store.enabled  # the default store is on for `ragtap serve`...
    rows = await play(config, stream=True)
    assert not data_dir().exists()  # ...but the demo leaves nothing in the data directory (issue 24)
    assert [(row["verdict"], row["poor_retrieval"]) for row in rows] == EXPECTED
    for row in rows:
        case = row["case"]
        assert row["answer"] == case.answer  # the app got only the answer
        assert row["streamed"] == row["answer"]  # streamed text equals the non-streamed answer
        assert set(row["scores"]) >= {"sdq", "sdrd", "sda", "qrd", "qa"}
    table = format_table(rows, config.thresholds)
    assert "unsupported_answer" in table and "parametric" in table and "FAIL" in table


def test_demo_command_rejects_a_bad_config(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from ragtap.cli import main

    bad = tmp_path / "config.toml"
    bad.write_text("[server]\nprot = 1\n", encoding="utf-8")
    assert main(["demo", "--config", str(bad)]) == 2
    assert "config error" in capsys.readouterr().err
