"""RAG prompt patterns defined in config.toml, for apps whose template no built-in rule knows.

    [[recognise.patterns]]
    name = "acme_support"                 # becomes RagContext.source
    regex = '''Knowledge:\\n(?P<context>.*?)\\n#####\\nCustomer asks: (?P<question>.*)'''
    roles = ["user"]                      # optional, default ["user", "system"]
    separator = "\\n=====\\n"               # optional, a literal string; default: blank lines

The regex is compiled once (DOTALL) when the pattern is built, so a bad pattern fails at startup and not on
the request path.  It needs a named group `context`; the group `question` is optional: without it the question
is the last user message (the layout of system-message templates such as LlamaIndex's chat engine).

Which messages are searched: every message whose role is in `roles`, newest first, the first match wins;
for the role "user" only the *last* user message, because earlier user turns are history (their template holds
an old question and old documents) and searching them would make every long chat pay for the whole history.
A pattern costs one `regex.search` per searched message on every chat request, RAG or not: write patterns that
start with a literal and avoid nested quantifiers (a catastrophic regex would stall the proxy).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtap.recognise.text import make_context, split_documents
from ragtap.types import RagContext


@dataclass(frozen=True, slots=True)
class CustomPattern:
    """One `[[recognise.patterns]]` entry.  Raises ValueError when the entry cannot work."""

    name: str
    regex: str  # a Python regex with named groups `question` (optional) and `context`, searched with DOTALL
    roles: tuple[str, ...] = ("user", "system")
    separator: str | None = None  # a literal that splits the context into documents; default: blank lines
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("recognise pattern: `name` must be a non-empty string")
        if not isinstance(self.regex, str):
            raise ValueError(f"recognise pattern {self.name!r}: `regex` must be a string")
        roles = self.roles
        if not isinstance(roles, (tuple, list)) or not roles or not all(isinstance(r, str) for r in roles):
            raise ValueError(f"recognise pattern {self.name!r}: `roles` must be a non-empty list of strings")
        object.__setattr__(self, "roles", tuple(roles))  # accept a list from TOML, keep the dataclass hashable
        if self.separator is not None and (not isinstance(self.separator, str) or not self.separator):
            raise ValueError(f"recognise pattern {self.name!r}: `separator` must be a non-empty string")
        try:
            compiled = re.compile(self.regex, re.DOTALL)
        except re.error as exc:
            raise ValueError(f"recognise pattern {self.name!r}: invalid regex: {exc}") from exc
        if "context" not in compiled.groupindex:
            raise ValueError(f"recognise pattern {self.name!r}: the regex needs a named group (?P<context>...)")
        object.__setattr__(self, "_compiled", compiled)

    def match(self, messages: Sequence[tuple[str, str]], last_user: str) -> RagContext | None:
        """Search `messages` ((role, text) pairs, newest last, the user role already reduced to the last user
        message by the caller) and return the context of the first (newest) message that matches."""
        has_question = "question" in self._compiled.groupindex
        for role, text in reversed(messages):
            if role not in self.roles:
                continue
            m = self._compiled.search(text)
            if m is None:
                continue
            context = m.group("context") or ""
            question = (m.group("question") or "") if has_question else last_user
            if self.separator is None:
                documents = split_documents(context)
            else:
                documents = context.split(self.separator)
            found = make_context(question, documents, self.name)
            if found is not None:
                return found
        return None


def patterns_from_config(entries: Any) -> tuple[CustomPattern, ...]:
    """Build the patterns from the decoded `[[recognise.patterns]]` array (a list of tables).

    Raises ValueError naming the entry for anything malformed: unknown keys, missing `name`/`regex`, wrong
    types, a regex that does not compile or lacks the `context` group.
    """
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ValueError("recognise.patterns must be an array of tables ([[recognise.patterns]])")
    allowed = {"name", "regex", "roles", "separator"}
    patterns = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"recognise.patterns[{index}] must be a table")
        unknown = set(entry) - allowed
        if unknown:
            raise ValueError(f"recognise.patterns[{index}]: unknown keys {sorted(unknown)}")
        if "name" not in entry or "regex" not in entry:
            raise ValueError(f"recognise.patterns[{index}]: `name` and `regex` are required")
        kwargs: dict[str, Any] = {"name": entry["name"], "regex": entry["regex"]}
        if "roles" in entry:
            roles = entry["roles"]
            if not isinstance(roles, (list, tuple)):
                raise ValueError(f"recognise.patterns[{index}]: `roles` must be a list of strings")
            kwargs["roles"] = tuple(roles)
        if "separator" in entry:
            kwargs["separator"] = entry["separator"]
        try:
            patterns.append(CustomPattern(**kwargs))
        except ValueError as exc:
            raise ValueError(f"recognise.patterns[{index}]: {exc}") from exc
    names = [p.name for p in patterns]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"recognise.patterns: duplicate names {duplicates}")
    return tuple(patterns)
