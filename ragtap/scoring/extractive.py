"""Short extractive answers: the case where cosine similarity misleads.

An answer such as "1066" or "the Normans" embeds far from any sentence (the thesis notes that short answers
score low on SDA and QA), yet when its words stand verbatim in the supporting content it plainly follows from
it.  This check lets the verdict treat such an answer as following its source instead of calling it
unsupported or a refusal.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
MAX_WORDS = 12  # longer answers embed well enough for cosine to judge them


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_extractive(answer: str, source: str | None) -> bool:
    """True when the short `answer`'s words appear, in order and contiguous, in `source`."""
    if not source:
        return False
    words = _words(answer)
    if not words or len(words) > MAX_WORDS:
        return False
    return f" {' '.join(words)} " in f" {' '.join(_words(source))} "
