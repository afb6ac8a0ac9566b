"""The stemmer every lexical comparison shares (words, and the nouns that say what a number counts)."""

from __future__ import annotations

import functools


# Cached: a text's words repeat across its claims, windows and documents (a quarter of a million calls for 600
# long-document interactions, a few thousand distinct words); bounded like the other scoring caches.
@functools.lru_cache(maxsize=32768)
def stem(word: str) -> str:
    """A light suffix stripper: enough for latch/latches, tighten/tightened, check/checking, (a final "e" dropped
    from longer words) increase/increased/increasing, and the nouns made of verbs with -ation, -ment, -ance
    (installation/install, agreement/agree, attendance/attend; at least four letters are left, so "payment" stays)."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if suffix == "es" and not word.endswith(("sses", "xes", "zes", "ches", "shes")):
            continue  # "boxes" -> "box", but "cases" -> "case" (the "s" rule)
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: len(word) - len(suffix)] + keep
            break
    for suffix in ("ation", "ment", "ance"):  # "installation"/"install", "agreement"/"agree"
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: len(word) - len(suffix)]
    if word.endswith("e") and len(word) >= 5 and not word.endswith("ee"):
        word = word[:-1]
    return word
