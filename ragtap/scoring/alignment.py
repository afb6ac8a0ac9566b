"""Evidence alignment: the sentence (or two adjacent sentences) of the documents that a claim rests on.

Checked against all documents at once, "the warranty lasts 3 years" passes wherever the documents say 2 years for
the warranty and 3 for the battery: every word and number is *somewhere*.  A claim is a statement about one thing,
and the documents state that thing in one place; so each claim is first aligned with that place, and its numbers,
names, negations and order words are then compared with *that* evidence (conflicts.py).

Alignment is lexical: the evidence sentences are ranked by how much of the claim's content they hold, each word
weighted by how rare it is among the evidence sentences (a word every sentence has says nothing about which one the
claim rests on).  Numbers and names take no part in the ranking, since they are what is compared afterwards: a
claim with a changed number must still find the sentence it changed.  Sentences are cut more eagerly than for
claims (a lower-cased or OCR'd document still has sentences: any `.`, `!`, `?` or `;` followed by a space ends one),
and a window of two adjacent sentences is considered when the second adds to the first.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.lexical import content_words
from ragtap.scoring.lossy import lost_words
from ragtap.scoring.passages import word_windows
from ragtap.scoring.sentences import ABBREVIATIONS

_EAGER_BOUNDARY = re.compile(r"(?<=[.!?;])[\"'”’)\]]*\s+|\n+")
_MAX_SENTENCE_WORDS = 60  # a run-on "sentence" (a table flattened to text) is cut into windows of this many words


@dataclass(frozen=True, slots=True)
class EvidenceSentence:
    document: int  # index of the document (-1: the supporting content, used as evidence for the answer)
    start: int  # character offsets in that document
    end: int
    text: str
    words: frozenset[str]  # content words, stemmed


@dataclass(frozen=True, slots=True)
class Window:
    """One or two adjacent evidence sentences a claim is aligned with."""

    document: int
    start: int
    end: int
    text: str
    coverage: float  # weighted share of the claim's content words the window holds (0..1)
    covered: int  # how many of the claim's content words it holds
    sentences: tuple[int, ...]  # indexes into the index's sentences


def _ends_with_abbreviation(text: str) -> bool:
    word = text.rstrip().rsplit(None, 1)[-1] if text.strip() else ""
    word = word.rstrip(".").lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


@functools.lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Eager sentence spans of one document text (cached: documents recur across requests)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _EAGER_BOUNDARY.finditer(text):
        if match.group(0).strip(" \t") == "" and _ends_with_abbreviation(text[start : match.start()]):
            continue
        spans.extend(_cut(text, start, match.start()))
        start = match.end()
    spans.extend(_cut(text, start, len(text)))
    return tuple(spans)


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """One sentence's span, stripped; a run-on one (a table flattened to text) cut into overlapping word windows."""
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    start, end = start + lead, start + len(piece.rstrip())
    return word_windows(text, start, end, _MAX_SENTENCE_WORDS) if start < end else []


@functools.lru_cache(maxsize=4096)
def _sentences_of(text: str, document: int) -> tuple[EvidenceSentence, ...]:
    return tuple(EvidenceSentence(document, a, b, text[a:b], frozenset(content_words(text[a:b]))) for a, b in _sentence_spans(text))


class EvidenceIndex:
    """The evidence sentences of one interaction, indexed by content word."""

    __slots__ = ("sentences", "lossy", "_postings", "_weight", "_unseen")

    def __init__(self, texts: Sequence[tuple[int, str]]) -> None:
        """`texts`: (document index, text) pairs; the supporting content may take part as document -1."""
        self.sentences: list[EvidenceSentence] = [s for document, text in texts for s in _sentences_of(text, document)]
        # documents that lost words in extraction: they cannot witness a missing negation (lossy.py)
        self.lossy: frozenset[int] = frozenset(document for document, text in texts if lost_words(text))
        postings: dict[str, list[int]] = {}
        for index, sentence in enumerate(self.sentences):
            for word in sentence.words:
                postings.setdefault(word, []).append(index)
        self._postings = postings
        count = len(self.sentences)
        # Inverse sentence frequency, smoothed: a word in every sentence still weighs a little.
        self._weight = {word: math.log(1 + count / len(ids)) for word, ids in postings.items()}
        self._unseen = math.log(1 + max(1, count))  # a claim word no evidence sentence has weighs as the rarest one

    def holds(self, word: str) -> bool:
        """Some evidence sentence has this content word."""
        return word in self._postings

    def weight(self, word: str) -> float:
        return self._weight.get(word, self._unseen)

    def align(self, words: Sequence[str], limit: int = 3) -> list[Window]:
        """The best windows for a claim's content words, best first (empty when no sentence shares a word)."""
        return self.align_with_subject(words, (), limit)[0]

    def align_with_subject(self, words: Sequence[str], subject: Sequence[str], limit: int = 3) -> tuple[list[Window], list[Window]]:
        """(`align`'s windows; the same candidates measured with `subject`'s words too, best first).  `subject`: the
        words a pronoun claim says through its subject (subjects.py): among the windows the claim's own words find,
        they count in coverage and order; they find none of their own -- else the sentence that introduced the
        subject, which says nothing against the claim, would win over the ones the claim's words point to."""
        weights = {w: self.weight(w) for w in words}
        if not weights or not self.sentences:
            return [], []
        total = sum(weights.values())
        scores: dict[int, float] = {}
        for word, weight in weights.items():
            for index in self._postings.get(word, ()):
                scores[index] = scores.get(index, 0.0) + weight
        if not scores:
            return [], []
        ranked = sorted(scores, key=lambda i: (-scores[i], i))[: max(limit, 4)]
        windows = [self._window((i,), weights, total) for i in ranked]
        # Two adjacent sentences when the neighbour holds claim words the sentence lacks.
        for index in ranked[:2]:
            for other in (index - 1, index + 1):
                if 0 <= other < len(self.sentences) and self.sentences[other].document == self.sentences[index].document and other in scores:
                    pair = tuple(sorted((index, other)))
                    window = self._window(pair, weights, total)
                    if window.coverage > windows[0].coverage + 1e-9:
                        windows.append(window)
        windows.sort(key=_best_first)
        own = windows[:limit]
        extra = {w: self.weight(w) for w in subject if w not in weights}
        if not extra:
            return own, own
        weights |= extra
        total = sum(weights.values())
        remeasured = [self._window(w.sentences, weights, total) for w in windows]
        return own, sorted(remeasured, key=_best_first)[:limit]

    def _window(self, indexes: tuple[int, ...], weights: dict[str, float], total: float) -> Window:
        first, last = self.sentences[indexes[0]], self.sentences[indexes[-1]]
        held = first.words if len(indexes) == 1 else first.words | last.words
        covered = [w for w in weights if w in held]
        text = first.text if len(indexes) == 1 else f"{first.text} {last.text}"
        return Window(first.document, first.start, last.end, text, sum(weights[w] for w in covered) / total, len(covered), indexes)


def _best_first(window: Window) -> tuple[float, int, tuple[int, ...]]:
    return (-window.coverage, len(window.sentences), window.sentences)
