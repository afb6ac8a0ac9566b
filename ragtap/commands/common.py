"""What several sub-commands share: user errors and reading an interaction file."""

from __future__ import annotations

from pathlib import Path

from ragtap.records import read_interactions
from ragtap.types import Interaction


class CommandError(Exception):
    """A mistake of the user's (missing file, bad option): printed as `ragtap: <message>`, exit code 2."""


def read_interaction_file(name: str) -> list[Interaction]:
    """All interactions of a JSONL file; RecordError (naming file:line) for a malformed line."""
    path = Path(name)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    return list(read_interactions(path))
