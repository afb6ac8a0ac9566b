"""Documents cut into overlapping passages that fit the embedder's window.

MiniLM reads 256 wordpieces and silently drops the rest, so support at the end of a long document was never
seen.  A document longer than `max_words` is cut at sentence boundaries into passages of at most `max_words`
words, each starting with the last sentence of the one before (so a claim that spans a cut still finds both
halves together); a single sentence longer than the budget is cut by words.  A short document is its own, only,
passage, so documents that always fitted score exactly as before.

The budget is in words, not wordpieces, so the scoring core needs no tokenizer: English averages about 1.3
wordpieces per word, and the default 160 words stays inside 256 wordpieces for ordinary prose.

`question_windows` cuts one passage into short overlapping windows of words, for QRD: a question is about one
detail of a paragraph, and its cosine with the whole paragraph is diluted by everything else the paragraph says
(metrics.py, docs/thresholds.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragtap.scoring.lexical import content_words
from ragtap.scoring.sentences import sentence_spans

DEFAULT_MAX_WORDS = 160
# QRD's windows: 12 words, 6 apart.  Chosen on SQuAD against 8/16/20-word and sentence windows (docs/thresholds.md).
DEFAULT_QRD_WINDOW_WORDS = 12


@dataclass(frozen=True, slots=True)
class Passage:
    document: int  # index of the document in the interaction
    start: int  # character offsets in that document
    end: int
    text: str


_WORD = re.compile(r"\S+")


def word_windows(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int]]:
    """Cut text[start:end] into windows of `max_words` words (half a window of overlap); text of at most
    `max_words` words is one window."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    if not words:
        return []
    step = max(1, max_words // 2)
    windows = []
    for first in range(0, len(words), step):
        last = min(first + max_words, len(words)) - 1
        windows.append((words[first][0], words[last][1]))
        if last == len(words) - 1:
            break
    return windows


def split_passages(document: str, index: int = 0, max_words: int = DEFAULT_MAX_WORDS) -> list[Passage]:
    if len(document.split()) <= max_words:
        return [Passage(index, 0, len(document), document)]
    units: list[tuple[int, int]] = []  # sentences, over-long ones already cut into windows
    for start, end in sentence_spans(document) or [(0, len(document))]:
        if len(document[start:end].split()) > max_words:
            units.extend(word_windows(document, start, end, max_words))
        else:
            units.append((start, end))
    passages: list[Passage] = []
    first = 0
    while first < len(units):
        words = 0
        last = first
        while last < len(units) and (last == first or words + len(document[units[last][0] : units[last][1]].split()) <= max_words):
            words += len(document[units[last][0] : units[last][1]].split())
            last += 1
        start, end = units[first][0], units[last - 1][1]
        passages.append(Passage(index, start, end, document[start:end]))
        if last >= len(units):
            break
        first = max(first + 1, last - 1)  # the next passage repeats the last sentence of this one
    return passages


def question_windows(passage: Passage, words: int = DEFAULT_QRD_WINDOW_WORDS, question: str | None = None) -> list[Passage]:
    """The windows of `words` words, half a window apart, that QRD compares the question with inside `passage`
    (offsets in the passage's document); none when the passage is itself no longer than one window.

    With the `question`: only the windows that share a content word with it, or all when none does.  The window a
    question is about nearly always shares a word with it: on 600 SQuAD questions and their own paragraphs, the best
    window was dropped for 10 (a 0.09 lower QRD on average for those), and 55% of the windows, the most numerous
    texts scoring embeds, were not embedded (docs/thresholds.md)."""
    if words <= 0:
        return []
    spans = word_windows(passage.text, 0, len(passage.text), words)
    if len(spans) < 2:
        return []
    windows = [Passage(passage.document, passage.start + a, passage.start + b, passage.text[a:b]) for a, b in spans]
    if question is None:
        return windows
    asked = set(content_words(question))
    about = [w for w in windows if asked.intersection(content_words(w.text))]
    return about or windows
