"""The sentence splitter behind claim-level grounding, context relevance and the WikiEval sentence signals.

Claims are located in the answer by character offsets (the triage page and the exported claims point at them),
and context relevance is a ratio of sentence counts, so the split must be reproducible and documented.  The rule:

1. Line breaks end a sentence (titles, list items and paragraphs of a document are separate units).
2. Inside a line, a sentence ends after `.`, `!` or `?` (optionally followed by closing quotes or brackets) when
   whitespace follows and the next character starts a sentence (an upper-case letter, a digit, or an opening
   quote/bracket).
   A '.', '!' or '?' glued to the next sentence ("provided.The mission") ends one too, when two lower-case
   letters precede it and a capitalised word follows (generated text sometimes loses that space).
3. ...except after a known abbreviation ("Mr.", "Dr.", "e.g.", "U.S.", "Inc.", month names, ...) or a single
   capital initial ("J. Robert Oppenheimer"), which never end a sentence.
4. Pieces are stripped; pieces with no letter or digit (stray punctuation) are dropped.

It is deliberately a small deterministic rule, not a trained model (NLTK's Punkt, which Ragas uses, needs a data
download): both sides of the ratio (the context and the judge's extraction) go through the same splitter, so a
mistake in it affects numerator and denominator alike.
"""

from __future__ import annotations

import re

ABBREVIATIONS: frozenset[str] = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "lt", "sgt", "capt", "gov",
        "sen", "rep", "rev", "hon", "inc", "ltd", "co", "corp", "bros", "dept", "univ", "assn", "vs", "etc", "al",
        "approx", "est", "no", "nos", "vol", "vols", "fig", "figs", "ed", "eds", "pp", "op", "cf", "ca", "c",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
        "e.g", "i.e", "u.s", "u.k", "u.n", "u.s.a", "a.m", "p.m", "ph.d", "d.c", "n.y",
    }
)

# The plain break after ".", "!" or "?" and whitespace, without the rules above: how the contradiction checks cut an
# aligned window into the sentences they compare a claim with (an abbreviation's dot may cut one in two there).
STOP_BREAK = re.compile(r"(?<=[.!?])\s+")

_BOUNDARY = re.compile(r"""[.!?]+["'”’)\]]*(?=\s+["'“‘(\[]?[A-Z0-9])|(?<=[a-z]{2})[.!?](?=[A-Z][a-z])""")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")
_HAS_TEXT = re.compile(r"[^\W_]", re.UNICODE)


def _is_abbreviation(text_before_dot: str) -> bool:
    """True when the '.'-terminated token at the end of `text_before_dot` is an abbreviation or an initial."""
    match = _WORD_BEFORE.search(text_before_dot[-24:])  # the last token is short: never scan the whole piece
    if match is None:
        return False
    token = match.group(1)
    if len(token) == 1 and token.isupper():  # an initial: "J."
        return True
    return token.lower().rstrip(".") in ABBREVIATIONS


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the sentences of `text`, by the rule in the module docstring."""
    spans: list[tuple[int, int]] = []
    line_start = 0
    for line in text.splitlines(keepends=True):
        start = 0
        pieces: list[tuple[int, int]] = []
        for match in _BOUNDARY.finditer(line):
            end = match.end()
            piece = line[start:end]
            if match.group(0).startswith(".") and match.group(0).rstrip("\"'”’)]") == "." and _is_abbreviation(piece.rstrip("\"'”’)]")):
                continue
            pieces.append((start, end))
            start = end
        pieces.append((start, len(line)))
        for a, b in pieces:
            piece = line[a:b]
            if not _HAS_TEXT.search(piece):
                continue
            lead = len(piece) - len(piece.lstrip())
            spans.append((line_start + a + lead, line_start + a + len(piece.rstrip())))
        line_start += len(line)
    return spans


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences by the rule in the module docstring."""
    return [text[a:b] for a, b in sentence_spans(text)]


def count_sentences(text: str) -> int:
    return len(split_sentences(text))
