"""Lexical evidence for a claim: which of its words, numbers and names the retrieved documents contain.

Cosine similarity cannot see that "tighten to 120 Nm" and "tighten to 95 Nm" disagree, nor that on-topic advice
the model added itself ("use jack stands") is not in the documents: both embed close to the text they imitate.
Words can.  A claim whose content words mostly stand in the documents is likely taken from them; a number or a
name that appears in the claim and nowhere in the documents is strong evidence that the model supplied it.

Matching is deliberately forgiving (lower case, a light suffix-stripping stem, digits compared without
thousands separators) because documents are often lower-cased, OCR'd or chunked mid-word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Function words, and the words every answer uses to frame itself ("you", "should", "make sure"): they say
# nothing about where the claim's content came from.
STOPWORDS: frozenset[str] = frozenset(
    """a an the of and or but if in on at to for by with from into onto over under about above below between
    is are was were be been being am do does did doing have has had having will would shall should can could
    may might must need needs it its it's this that these those there their they them he she his her him we our
    us you your yours i me my what who whom whose when where which how why as than then so such also not no nor
    yes only just very too more most less least any some all each every both either neither other another same
    one ones here up down out off again further once own s t don't doesn't isn't aren't can't won't
    make makes made sure ensure please note like well way ways use used using get gets got may always never
    able before after while during until via per""".split()
)
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])|\d+(?:[.,]\d+)*(?=[a-zA-Z%°])")
# A capitalised word inside a sentence (not its first word), or an acronym / model code anywhere.
_NAME = re.compile(r"(?<=[a-z0-9,;:)] )[A-Z][a-zA-Z0-9\-]+|\b[A-Z]{2,}[A-Z0-9\-]*\b|\b[A-Z]+\d[A-Z0-9\-]*\b")


def stem(word: str) -> str:
    """A light suffix stripper: enough for latch/latches, tighten/tightened, check/checking."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def content_words(text: str) -> list[str]:
    """The claim's content words, lower-cased and stemmed, in order (stopwords and 1-letter tokens dropped)."""
    words = []
    for token in _TOKEN.findall(text.lower()):
        token = token.replace("’", "'")
        if len(token) > 1 and token not in STOPWORDS and not token.isdigit():
            words.append(stem(token))
    return words


def numbers(text: str) -> set[str]:
    """Numbers as written, without thousands separators ("1,200" and "1200" match; "2.5" stays "2.5")."""
    found = set()
    for match in _NUMBER.findall(text):
        value = re.sub(r",(?=\d{3}\b)", "", match)
        found.add(value.rstrip(".,"))
    return found


def names(text: str) -> set[str]:
    """Proper names and codes (lower-cased): capitalised words inside a sentence, acronyms, model codes."""
    return {m.lower() for m in _NAME.findall(text)}


@dataclass(frozen=True, slots=True)
class DocumentVocabulary:
    """What the lexical checks need from the evidence texts, built once per interaction."""

    words: frozenset[str]
    numbers: frozenset[str]
    text: str  # all texts, lower-cased, for substring checks of multi-word names

    @classmethod
    def of(cls, texts: Sequence[str]) -> DocumentVocabulary:
        parts = [_vocabulary_of_text(text) for text in texts]
        if len(parts) == 1:
            return parts[0]
        return cls(
            frozenset().union(*(p.words for p in parts)),
            frozenset().union(*(p.numbers for p in parts)),
            "\n".join(p.text for p in parts),
        )


@functools.lru_cache(maxsize=4096)
def _vocabulary_of_text(text: str) -> DocumentVocabulary:
    # Retrieved documents recur across requests (the same manual page answers many questions): cache by text.
    return DocumentVocabulary(frozenset(content_words(text)), frozenset(numbers(text)), text.lower())


@dataclass(frozen=True, slots=True)
class LexicalEvidence:
    """How much of a claim the documents contain, word for word."""

    content_words: int  # the claim's content words
    precision: float  # share of them found in the documents (1.0 for a claim with none)
    missing_numbers: tuple[str, ...]  # numbers in the claim that no document contains
    missing_names: tuple[str, ...]  # names/codes in the claim that no document contains


def lexical_evidence(claim: str, vocabulary: DocumentVocabulary) -> LexicalEvidence:
    words = content_words(claim)
    found = sum(1 for word in words if word in vocabulary.words)
    missing_numbers = tuple(sorted(n for n in numbers(claim) if n not in vocabulary.numbers))
    missing_names = tuple(sorted(n for n in names(claim) if n not in vocabulary.text))
    return LexicalEvidence(len(words), found / len(words) if words else 1.0, missing_numbers, missing_names)
