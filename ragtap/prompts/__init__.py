"""Prompts as data: each `*.toml` file in this folder holds one prompt's text and its metadata."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any


@cache
def load_prompt(name: str) -> dict[str, Any]:
    """The parsed prompt file `name.toml` (cached; prompt files are read once per process)."""
    text = resources.files(__package__).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache  # (read for every injected request: the text itself, not a copy per request)
def prompt_text(name: str, field: str = "system") -> str:
    return str(load_prompt(name)[field]).strip()
