"""Content redaction: the `[store] redact` regexes, applied to every text of a row before the store writes it.

Runs on the store's writer thread (the regexes may be slow on long documents; the event loop never waits for
them).  Claims carry their own text and offsets into the answer: a redacted answer keeps the claims' offsets
only where they still point at the same characters, so the triage page never highlights a wrong span.
"""

from __future__ import annotations

import dataclasses
import re

from ragtap.store.base import CapturedInteraction
from ragtap.types import Document


class Redactor:
    def __init__(self, patterns: tuple[str, ...], replacement: str = "[redacted]") -> None:
        self._patterns = tuple(re.compile(p) for p in patterns)
        self._replacement = replacement

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def text(self, value: str) -> str:
        for pattern in self._patterns:
            value = pattern.sub(self._replacement, value)
        return value

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def __call__(self, item: CapturedInteraction) -> CapturedInteraction:
        if not self._patterns:
            return item
        answer, supporting = self.optional(item.answer), self.optional(item.supporting)
        claims = []
        for claim in item.claims:
            source = (answer if claim.of == "answer" else supporting) or ""
            text = self.text(claim.text)
            # Offsets are kept where the redacted source still holds the redacted claim there; else the claim is
            # looked up again (redaction before it shifted it); not found: an empty span (nothing highlighted).
            where = claim.start if source[claim.start:claim.end] == text else source.find(text)
            start, end = (where, where + len(text)) if where >= 0 else (0, 0)
            claims.append(dataclasses.replace(claim, text=text, start=start, end=end))
        return dataclasses.replace(
            item,
            question=self.text(item.question),
            documents=tuple(Document(self.text(d.text), d.id) for d in item.documents),
            supporting=supporting,
            answer=answer,
            delivered_answer=self.optional(item.delivered_answer),
            claims=tuple(claims),
        )
