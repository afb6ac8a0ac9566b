"""A captured interaction (and a label) as the store may write it: every field through the one `Redactor`
(ragtap/privacy.py) that the JSONL log and OpenTelemetry use too.

Runs on the store's writer thread (the regexes may be slow on long documents; the event loop never waits for
them).  What is redacted: the question, the documents, the supporting content, the answer, each claim's text and
its missing numbers / names / conflicts (offsets re-pointed into the redacted answer), the answer the guard
delivered instead (when it changed it), the user and session ids
(hashed by default), and a label's note.  What is not: scores, thresholds, the verdict and its explanation (built
from positions and rule names, never from text), model names, token counts, trace ids.
"""

from __future__ import annotations

import dataclasses

from ragtap.privacy import Redactor
from ragtap.store.base import CapturedInteraction, Label


def redact_captured(item: CapturedInteraction, redactor: Redactor) -> CapturedInteraction:
    answer, supporting = redactor.optional(item.answer), redactor.optional(item.supporting)
    return dataclasses.replace(
        item,
        question=redactor.text(item.question),
        documents=redactor.documents(item.documents),
        supporting=supporting,
        answer=answer,
        delivered_answer=redactor.optional(item.delivered_answer),  # what the guard let the app receive
        claims=redactor.claims(item.claims, answer, supporting, item.documents),
        user=redactor.identity(item.user),
        session=redactor.identity(item.session),
        label=None if item.label is None else redact_label(item.label, redactor),
    )


def redact_label(label: Label, redactor: Redactor) -> Label:
    """The label with its note redacted (a note is free text a person typed about the interaction)."""
    return dataclasses.replace(label, note=redactor.text(label.note))
